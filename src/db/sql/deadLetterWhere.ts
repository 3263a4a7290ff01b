// The one filter shared by queries, stats, bulk mutations and subscriptions, and its SQL. Every field
// is optional; given fields combine with AND. `deadLetterWhereSql` renders it as a boolean SQL
// expression over `lazarus_dead_letters` (dead_letters joined with its state row) aliased `d`, with every value bound (never concatenated) except enum
// values, which are names of our own enums and are written as literals. domain/deadLetterFilter.ts
// evaluates the same filter in memory (for subscriptions).
import { Prisma } from '../../generated/prisma/client.ts';
import { DeadLetterStatus, ErrorKind } from '../../generated/prisma/enums.ts';
import { errorGroupMemberSql } from './errorGroupMembers.ts';

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
  /** Members of this error group (dead_letters.error_group_id, migration 20261125130000_error_groups_ledger). */
  groupId?: bigint;
}

// Where each filter field is read: `event` fields are dead_letters' own columns (written once),
// `state` fields live on dead_letter_states, and `both` are written once on dead_letters and copied
// onto the state row under the same name (id, event type, ordering key, created_at). dead_letters
// still has status, attempts and next_attempt_at, as an event was recorded, so a state field over
// dead_letters alone would be answered, wrongly: a new field must say which it is.
const FILTER_FIELD_TABLES: Record<keyof DeadLetterFilter, 'event' | 'state' | 'both'> = {
  ids: 'both', statuses: 'state', eventTypes: 'both', queues: 'event', sources: 'event', orderingKey: 'both',
  errorKinds: 'event', errorText: 'event', payloadContains: 'event', payloadPath: 'event', createdAt: 'both',
  updatedAt: 'state', nextAttemptAt: 'state', attempts: 'state', errorSignatures: 'event', groupId: 'event',
};

/** True when `deadLetterWhereSql(filter)` reads only columns of dead_letters itself (aliased `d`). */
export function isEventFilter(filter: DeadLetterFilter): boolean {
  return Object.entries(filter).every(([field, value]) => value === undefined || FILTER_FIELD_TABLES[field as keyof DeadLetterFilter] !== 'state');
}

/**
 * A filter in two parts: `state`, the fields dead_letter_states can answer (its own and those copied
 * onto it), and `event`, the fields only dead_letters holds, or null when there are none. Each part
 * renders with deadLetterWhereSql over its own table as `d`.
 */
export function splitByTable(filter: DeadLetterFilter): { state: DeadLetterFilter; event: DeadLetterFilter | null } {
  const state: DeadLetterFilter = {};
  const event: DeadLetterFilter = {};
  for (const [field, value] of Object.entries(filter)) {
    if (value !== undefined) Object.assign(FILTER_FIELD_TABLES[field as keyof DeadLetterFilter] === 'event' ? event : state, { [field]: value });
  }
  return { state, event: Object.keys(event).length > 0 ? event : null };
}

/**
 * What a filter's SQL is read over, as `d`: dead_letters alone when the filter reads no state
 * (`isEventOnly`, from isEventFilter), else the view with the state joined. Every event has its
 * state row, so for such a filter the join only adds a state lookup per row.
 */
export function deadLetterSource(isEventOnly: boolean): Prisma.Sql {
  return Prisma.raw(isEventOnly ? 'dead_letters' : 'lazarus_dead_letters');
}

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

/** The errorText condition alone, over `lazarus_dead_letters d`. */
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
 * A literal is planned with its own frequency (PENDING is 40% of rows, PROCESSING a handful) even
 * where a bound value might get one generic plan for both.
 */
function enumIn(column: Prisma.Sql, values: readonly string[], names: Record<string, string>, type: string): Prisma.Sql {
  if (values.length === 0) return Prisma.sql`false`; // an empty list matches nothing, as `= any('{}')` did
  const literals = values.map((value) => {
    if (!Object.hasOwn(names, value)) throw new Error(`not a ${type} value: ${value}`);
    return `'${value}'`;
  });
  return Prisma.sql`${column} ${Prisma.raw(literals.length === 1 ? `= ${literals[0]}::${type}` : `in (${literals.join(', ')})`)}`;
}

// The read-side indexes of dead_letter_states leave PROCESSING rows out (migration
// 20261128120000_partial_read_indexes); dead_letter_states_lease_idx holds those. PostgreSQL uses a
// partial index only where the query implies its predicate, but it can split an OR over two
// indexes (a BitmapOr), each arm implying its own index's predicate. So a status list with
// PROCESSING and others is written as such an OR, and a filter on updated_at or attempts that
// admits PROCESSING carries the always-true OR below, which lets the range use its index.
const EITHER_SIDE_OF_PROCESSING = Prisma.sql`(d.status <> 'PROCESSING' or d.status = 'PROCESSING')`;

/** The status condition over `d`, as literals; one status is `d.status = '…'::"DeadLetterStatus"`. */
export function statusSql(statuses: readonly DeadLetterStatus[]): Prisma.Sql {
  const others = statuses.filter((status) => status !== DeadLetterStatus.PROCESSING);
  if (others.length === 0 || others.length === statuses.length) return enumIn(Prisma.sql`d.status`, statuses, DeadLetterStatus, '"DeadLetterStatus"');
  return Prisma.sql`(${enumIn(Prisma.sql`d.status`, others, DeadLetterStatus, '"DeadLetterStatus"')} or d.status = 'PROCESSING')`;
}

/** Renders the filter as a boolean SQL expression over `lazarus_dead_letters d`; values are bound, enum names are literals. */
export function deadLetterWhereSql(filter: DeadLetterFilter): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  // One value binds as `=`, not `= any(array)`: PostgreSQL 15 cannot return a `= any` index scan
  // in index order, so with an array it walks the created_at index and filters instead of using
  // the (column, created_at) index.
  const oneOf = (column: Prisma.Sql, values: readonly string[]) =>
    values.length === 1 ? Prisma.sql`${column} = ${values[0]}::text` : Prisma.sql`${column} = any(${values}::text[])`;
  if (filter.ids) parts.push(Prisma.sql`d.id = any(${filter.ids.map(String)}::bigint[])`);
  if (filter.statuses) parts.push(statusSql(filter.statuses));
  else if (filter.updatedAt || filter.attempts) parts.push(EITHER_SIDE_OF_PROCESSING);
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
  if (filter.errorSignatures) parts.push(oneOf(Prisma.sql`d.error_signature`, filter.errorSignatures));
  if (filter.groupId !== undefined) parts.push(errorGroupMemberSql(filter.groupId));
  return parts.length ? Prisma.join(parts, ' and ') : Prisma.sql`true`;
}
