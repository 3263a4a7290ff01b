// The SQL of DeadLetterFilter: `deadLetterWhereSql` renders a filter as a boolean SQL expression
// over `dead_letters_current` (dead_letters joined with its state row) aliased `d`, one operator kind
// at a time (the fields and their operators are declared in db/deadLetterFilterFields.ts), with every
// value bound (never concatenated) except enum values, which are names of our own enums and are
// written as literals. domain/deadLetterFilter.ts evaluates the same operators in memory (for
// subscriptions).
import { Prisma } from '../../generated/prisma/client.ts';
import { DeadLetterStatus, ErrorKind } from '../../generated/prisma/enums.ts';
import {
  DEAD_LETTER_FILTER_FIELDS, filterFields, type DeadLetterFilter, type FilterColumn, type FilterOperator, type IntRange, type TimeRange,
} from '../deadLetterFilterFields.ts';

export type { DeadLetterFilter, IntRange, TimeRange } from '../deadLetterFilterFields.ts';

const tableOf = (field: string) => DEAD_LETTER_FILTER_FIELDS[field as keyof typeof DEAD_LETTER_FILTER_FIELDS]?.table;

/** True when `deadLetterWhereSql(filter)` reads only columns of dead_letters itself (aliased `d`). */
export function isEventFilter(filter: DeadLetterFilter): boolean {
  return Object.entries(filter).every(([field, value]) => value === undefined || tableOf(field) !== 'state');
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
    if (value !== undefined) Object.assign(tableOf(field) === 'event' ? event : state, { [field]: value });
  }
  return { state, event: Object.keys(event).length > 0 ? event : null };
}

/**
 * What a filter's SQL is read over, as `d`: dead_letters alone when the filter reads no state
 * (`isEventOnly`, from isEventFilter), else the view with the state joined. Every event has its
 * state row, so for such a filter the join only adds a state lookup per row.
 */
export function deadLetterSource(isEventOnly: boolean): Prisma.Sql {
  return Prisma.raw(isEventOnly ? 'dead_letters' : 'dead_letters_current');
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

/** The errorText condition alone, over `dead_letters_current d`. */
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

const ENUMS: Record<string, Record<string, string>> = { DeadLetterStatus, ErrorKind };
// Columns whose read index on dead_letter_states leaves PROCESSING out (see EITHER_SIDE_OF_PROCESSING).
const PARTIAL_INDEXED: ReadonlySet<FilterColumn> = new Set(['updatedAt', 'attempts']);

/** `d.<column>` for a column named as in Prisma (orderingKey → d.ordering_key). */
function columnSql(column: FilterColumn): Prisma.Sql {
  return Prisma.raw(`d.${column.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`);
}

// One value binds as `=`, not `= any(array)`: PostgreSQL 15 cannot return a `= any` index scan
// in index order, so with an array it walks the created_at index and filters instead of using
// the (column, created_at) index.
function oneOf(column: Prisma.Sql, values: readonly string[]): Prisma.Sql {
  return values.length === 1 ? Prisma.sql`${column} = ${values[0]}::text` : Prisma.sql`${column} = any(${values}::text[])`;
}

/** One operator's condition(s) over `d`, pushed onto `parts`. */
function operatorSql(op: FilterOperator, value: unknown, parts: Prisma.Sql[]): void {
  switch (op.kind) {
    case 'inList': {
      const values = value as readonly (string | bigint)[];
      if (op.type === 'bigint') parts.push(Prisma.sql`${columnSql(op.column)} = any(${values.map(String)}::bigint[])`);
      else parts.push(oneOf(columnSql(op.column), values as string[]));
      return;
    }
    case 'inEnum': {
      const values = value as readonly string[];
      parts.push(op.column === 'status' ? statusSql(values as DeadLetterStatus[]) : enumIn(columnSql(op.column), values, ENUMS[op.enum]!, `"${op.enum}"`));
      return;
    }
    case 'equals':
      parts.push(op.type === 'bigint' ? Prisma.sql`${columnSql(op.column)} = ${value as bigint}::bigint` : Prisma.sql`${columnSql(op.column)} = ${value as string}`);
      return;
    case 'textSearch':
      parts.push(errorTextSql(value as string, 'index'));
      return;
    case 'jsonContains':
      parts.push(Prisma.sql`${columnSql(op.column)} @> ${JSON.stringify(value)}::jsonb`);
      return;
    case 'jsonPathEquals': {
      const { path, equals } = value as { path: string[]; equals: unknown };
      // Containment first so the GIN index narrows the rows; `#>` then checks exact equality
      // (containment alone would also accept a larger object or array at the path).
      parts.push(Prisma.sql`(${columnSql(op.column)} @> ${JSON.stringify(nestAtPath(path, equals))}::jsonb
      and ${columnSql(op.column)} #> ${path}::text[] = ${JSON.stringify(equals)}::jsonb)`);
      return;
    }
    case 'timeRange':
      timeRangeSql(columnSql(op.column), value as TimeRange, parts);
      return;
    case 'intRange': {
      const { min, max } = value as IntRange;
      if (min !== undefined) parts.push(Prisma.sql`${columnSql(op.column)} >= ${min}::int`);
      if (max !== undefined) parts.push(Prisma.sql`${columnSql(op.column)} <= ${max}::int`);
      return;
    }
  }
}

function readsPartialIndexedRange(filter: DeadLetterFilter): boolean {
  return filterFields().some(([field, { op }]) =>
    filter[field] !== undefined && (op.kind === 'timeRange' || op.kind === 'intRange') && PARTIAL_INDEXED.has(op.column));
}

/** Renders the filter as a boolean SQL expression over `dead_letters_current d`; values are bound, enum names are literals. */
export function deadLetterWhereSql(filter: DeadLetterFilter): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  for (const [field, { op }] of filterFields()) {
    const value = filter[field];
    if (value !== undefined) operatorSql(op, value, parts);
    else if (op.kind === 'inEnum' && op.column === 'status' && readsPartialIndexedRange(filter)) parts.push(EITHER_SIDE_OF_PROCESSING);
  }
  return parts.length ? Prisma.join(parts, ' and ') : Prisma.sql`true`;
}
