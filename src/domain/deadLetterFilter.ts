// The one filter shared by queries, stats, bulk mutations and subscriptions. Every field is
// optional; given fields combine with AND. `deadLetterWhereSql` renders it as a boolean SQL
// expression over `dead_letters` aliased `d`, with every value bound (never concatenated) except
// enum values, which are names of our own enums and are written as literals, and
// `matchesDeadLetterFilter` evaluates the same filter in memory (for subscriptions).
import { Prisma } from '../generated/prisma/client.ts';
import type { DeadLetter } from '../generated/prisma/client.ts';
import { DeadLetterStatus, ErrorKind } from '../generated/prisma/enums.ts';
import { errorGroupMemberSql } from '../db/sql/errorGroupMembers.ts';
import type { Db } from '../db/createDb.ts';
import { groupSignatureOf, readErrorGroupKey, type ErrorGroupKey } from './errorGroups.ts';
import { jsonContains, jsonEquals } from './jsonMatch.ts';

/** Half-open time range [from, to); either end may be open. */
export interface TimeRange {
  from?: Date;
  to?: Date;
}

/** Inclusive integer range; either end may be open. */
export interface IntRange {
  min?: number;
  max?: number;
}

export interface DeadLetterFilter {
  ids?: bigint[];
  statuses?: DeadLetterStatus[];
  eventTypes?: string[];
  queues?: string[];
  sources?: string[];
  orderingKey?: string;
  errorKinds?: ErrorKind[];
  /** Case-insensitive substring of the error message or stack (trigram indexes on both). */
  errorText?: string;
  /** jsonb containment (`payload @> value`). */
  payloadContains?: unknown;
  /** The payload value at `path` (object keys) equals `equals` (jsonb equality). */
  payloadPath?: { path: string[]; equals: unknown };
  createdAt?: TimeRange;
  updatedAt?: TimeRange;
  nextAttemptAt?: TimeRange;
  attempts?: IntRange;
  /** Exact error signatures (see `lazarus_error_signature` in the read-side migration). */
  errorSignatures?: string[];
  /** Members of this error group (migration 20261125100000_error_groups). */
  groupId?: bigint;
  /**
   * The group's key, for matching in memory (subscriptions): set by `withErrorGroupKey`; null when
   * the group does not exist (nothing matches). SQL reads the key from the group itself.
   */
  groupKey?: ErrorGroupKey | null;
}

/** The columns of a dead letter the filter reads. */
export type DeadLetterFilterRow = Pick<
  DeadLetter,
  | 'id' | 'status' | 'eventType' | 'queue' | 'source' | 'orderingKey' | 'errorKind' | 'errorMessage' | 'errorStack'
  | 'errorSignature' | 'fingerprint' | 'payload' | 'createdAt' | 'updatedAt' | 'nextAttemptAt' | 'attempts'
>;

/** Escapes LIKE wildcards so user text is matched literally (backslash is ILIKE's escape). */
export function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function timeRangeSql(column: Prisma.Sql, range: TimeRange | undefined, parts: Prisma.Sql[]) {
  if (!range) return;
  if (range.from) parts.push(Prisma.sql`${column} >= ${range.from}::timestamptz`);
  if (range.to) parts.push(Prisma.sql`${column} < ${range.to}::timestamptz`);
}

/** Nests `value` under `path`: ['a','b'], 1 → {"a":{"b":1}}. */
export function nestAtPath(path: readonly string[], value: unknown): unknown {
  return path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value);
}

/**
 * How `errorText` is checked. `index`: a semi-join on the trigram-indexed side table (see migration
 * 20261122000000_error_text_search), best when the text is rare. `scan`: the row's own columns,
 * row by row, best when walking an order index for a common text (the first matches come early).
 */
export type ErrorTextMode = 'index' | 'scan';

/** The errorText condition alone, over `dead_letters d`. */
export function errorTextSql(text: string, mode: ErrorTextMode): Prisma.Sql {
  const pattern = likeContains(text);
  if (mode === 'index') {
    return Prisma.sql`d.id in (select t.dead_letter_id from dead_letter_error_texts t
                                where t.error_message ilike ${pattern} or t.error_stack ilike ${pattern})`;
  }
  return Prisma.sql`(d.error_message ilike ${pattern} or d.error_stack ilike ${pattern})`;
}

/**
 * Enum values as literals: names from our own enum, never a client's text (anything else throws).
 * PostgreSQL then plans with each value's own frequency, also in a prepared statement (a bound
 * status would get one plan for PENDING, 40% of rows, and PROCESSING, a handful, alike).
 */
function enumIn(column: Prisma.Sql, values: readonly string[], names: Record<string, string>, type: string): Prisma.Sql {
  if (values.length === 0) return Prisma.sql`false`; // an empty list matches nothing, as `= any('{}')` did
  const literals = values.map((value) => {
    if (!Object.hasOwn(names, value)) throw new Error(`not a ${type} value: ${value}`);
    return `'${value}'`;
  });
  return Prisma.sql`${column} ${Prisma.raw(literals.length === 1 ? `= ${literals[0]}::${type}` : `in (${literals.join(', ')})`)}`;
}

// Filters whose every plan, in created order, walks an index in that order with the values as
// index conditions (the created_at index, or one on (column, created_at)), so one plan serves
// every value: a generic plan cannot turn a rare value's few rows into a walk of the whole table.
const VALUE_INDEPENDENT_PLAN = new Set<keyof DeadLetterFilter>(['ids', 'statuses', 'errorKinds', 'eventTypes', 'queues', 'sources', 'createdAt']);
const SINGLE_VALUED = ['eventTypes', 'queues', 'sources'] as const;

/**
 * Whether a page of this filter in `order` may run as a named prepared statement, whose plan
 * PostgreSQL reuses for other values once it finds a generic plan no dearer than the custom ones:
 * in created order, or without a filter (the order's own index, nothing else). Enum values are
 * literals (see enumIn); a list of several text values is left out, as are error text, payload
 * and the other ranges, whose best plan depends on how many rows the value matches.
 */
export function hasValueIndependentPlan(filter: DeadLetterFilter, order: string): boolean {
  const keys = Object.keys(filter);
  if (keys.length === 0) return true;
  return (
    order === 'CREATED_AT' &&
    keys.every((key) => VALUE_INDEPENDENT_PLAN.has(key as keyof DeadLetterFilter)) &&
    SINGLE_VALUED.every((key) => (filter[key]?.length ?? 1) === 1)
  );
}

/** Renders the filter as a boolean SQL expression over `dead_letters d`; values are bound, enum names are literals. */
export function deadLetterWhereSql(filter: DeadLetterFilter): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  // One value binds as `=`, not `= any(array)`: PostgreSQL 15 cannot return a `= any` index scan
  // in index order, so with an array it walks the created_at index and filters instead of using
  // the (column, created_at) index.
  const oneOf = (column: Prisma.Sql, values: readonly string[]) =>
    values.length === 1 ? Prisma.sql`${column} = ${values[0]}::text` : Prisma.sql`${column} = any(${values}::text[])`;
  if (filter.ids) parts.push(Prisma.sql`d.id = any(${filter.ids.map(String)}::bigint[])`);
  if (filter.statuses) parts.push(enumIn(Prisma.sql`d.status`, filter.statuses, DeadLetterStatus, '"DeadLetterStatus"'));
  if (filter.eventTypes) parts.push(oneOf(Prisma.sql`d.event_type`, filter.eventTypes));
  if (filter.queues) parts.push(oneOf(Prisma.sql`d.queue`, filter.queues));
  if (filter.sources) parts.push(oneOf(Prisma.sql`d.source`, filter.sources));
  if (filter.orderingKey !== undefined) parts.push(Prisma.sql`d.ordering_key = ${filter.orderingKey}`);
  if (filter.errorKinds) parts.push(enumIn(Prisma.sql`d.error_kind`, filter.errorKinds, ErrorKind, '"ErrorKind"'));
  if (filter.errorText !== undefined) parts.push(errorTextSql(filter.errorText, 'index'));
  if (filter.payloadContains !== undefined) {
    parts.push(Prisma.sql`d.payload @> ${JSON.stringify(filter.payloadContains)}::jsonb`);
  }
  if (filter.payloadPath) {
    const { path, equals } = filter.payloadPath;
    // Containment first so the GIN index narrows the rows; `#>` then checks exact equality
    // (containment alone would also accept a larger object or array at the path).
    parts.push(Prisma.sql`(d.payload @> ${JSON.stringify(nestAtPath(path, equals))}::jsonb
      and d.payload #> ${path}::text[] = ${JSON.stringify(equals)}::jsonb)`);
  }
  timeRangeSql(Prisma.sql`d.created_at`, filter.createdAt, parts);
  timeRangeSql(Prisma.sql`d.updated_at`, filter.updatedAt, parts);
  timeRangeSql(Prisma.sql`d.next_attempt_at`, filter.nextAttemptAt, parts);
  if (filter.attempts?.min !== undefined) parts.push(Prisma.sql`d.attempts >= ${filter.attempts.min}::int`);
  if (filter.attempts?.max !== undefined) parts.push(Prisma.sql`d.attempts <= ${filter.attempts.max}::int`);
  if (filter.errorSignatures) parts.push(Prisma.sql`d.error_signature = any(${filter.errorSignatures}::text[])`);
  if (filter.groupId !== undefined) parts.push(errorGroupMemberSql(filter.groupId));
  return parts.length ? Prisma.join(parts, ' and ') : Prisma.sql`true`;
}

function inTimeRange(value: Date | null, range: TimeRange | undefined): boolean {
  if (!range) return true;
  if (value === null) return range.from === undefined && range.to === undefined;
  if (range.from && value.getTime() < range.from.getTime()) return false;
  if (range.to && value.getTime() >= range.to.getTime()) return false;
  return true;
}

function payloadAt(payload: unknown, path: readonly string[]): { found: boolean; value: unknown } {
  let current = payload;
  for (const key of path) {
    if (current === null || typeof current !== 'object' || Array.isArray(current) || !Object.hasOwn(current, key)) {
      return { found: false, value: undefined };
    }
    current = (current as Record<string, unknown>)[key];
  }
  return { found: true, value: current };
}

/** The columns a deleted dead letter's tombstone keeps (migration 20261124110000_delete_tombstones). */
export type RemovedDeadLetterFilterRow = Omit<DeadLetterFilterRow, 'errorMessage' | 'errorStack' | 'payload'>;

/**
 * Whether a deletion belongs to a subscriber's stream. Criteria on text a tombstone does not keep
 * (error text, payload) count as matching: a subscriber that may have shown the row learns that it
 * is gone, and one that never did gets a deletion of an id it does not know.
 */
export function matchesRemovedDeadLetter(row: RemovedDeadLetterFilterRow, filter: DeadLetterFilter): boolean {
  const { errorText: _text, payloadContains: _contains, payloadPath: _path, ...kept } = filter;
  return matchesDeadLetterFilter({ ...row, errorMessage: '', errorStack: null, payload: null }, kept);
}

/**
 * The filter with its group's key, which `matchesDeadLetterFilter` needs for `groupId` (a group's
 * key never changes, so one read serves a whole subscription). Unchanged without `groupId`.
 */
export async function withErrorGroupKey(db: Db, filter: DeadLetterFilter): Promise<DeadLetterFilter> {
  if (filter.groupId === undefined) return filter;
  return { ...filter, groupKey: await readErrorGroupKey(db, filter.groupId) };
}

/**
 * Evaluates the filter in memory on one row, with the same meaning as `deadLetterWhereSql`
 * (used to filter subscription events without a query). Prisma truncates row times to
 * milliseconds, which keeps every comparison with a millisecond bound the same as in SQL.
 */
export function matchesDeadLetterFilter(row: DeadLetterFilterRow, filter: DeadLetterFilter): boolean {
  if (filter.ids && !filter.ids.includes(row.id)) return false;
  if (filter.statuses && !filter.statuses.includes(row.status)) return false;
  if (filter.eventTypes && !filter.eventTypes.includes(row.eventType)) return false;
  if (filter.queues && !filter.queues.includes(row.queue)) return false;
  if (filter.sources && !filter.sources.includes(row.source)) return false;
  if (filter.orderingKey !== undefined && row.orderingKey !== filter.orderingKey) return false;
  if (filter.errorKinds && !filter.errorKinds.includes(row.errorKind)) return false;
  if (filter.errorText !== undefined) {
    const needle = filter.errorText.toLowerCase();
    const inStack = row.errorStack !== null && row.errorStack.toLowerCase().includes(needle);
    if (!row.errorMessage.toLowerCase().includes(needle) && !inStack) return false;
  }
  if (filter.payloadContains !== undefined && !jsonContains(row.payload, filter.payloadContains, true)) return false;
  if (filter.payloadPath) {
    const at = payloadAt(row.payload, filter.payloadPath.path);
    if (!at.found || !jsonEquals(at.value, filter.payloadPath.equals)) return false;
  }
  if (!inTimeRange(row.createdAt, filter.createdAt)) return false;
  if (!inTimeRange(row.updatedAt, filter.updatedAt)) return false;
  if (!inTimeRange(row.nextAttemptAt, filter.nextAttemptAt)) return false;
  if (filter.attempts?.min !== undefined && row.attempts < filter.attempts.min) return false;
  if (filter.attempts?.max !== undefined && row.attempts > filter.attempts.max) return false;
  if (filter.errorSignatures && !filter.errorSignatures.includes(row.errorSignature)) return false;
  if (filter.groupId !== undefined) {
    const key = filter.groupKey;
    if (!key || row.eventType !== key.eventType || row.errorKind !== key.errorKind || groupSignatureOf(row) !== key.signature) return false;
  }
  return true;
}
