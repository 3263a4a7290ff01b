// The one filter shared by queries, stats, bulk mutations and subscriptions: its fields (declared in
// db/deadLetterFilterFields.ts, with their SQL in db/sql/deadLetterWhere.ts) and
// `matchesDeadLetterFilter`, which evaluates it in memory for subscriptions. Both are written once
// per operator kind, so a field agrees with its SQL by construction (test/read.filterAgreement.test.ts).
import type { DeadLetter, DeadLetterTombstone } from '../generated/prisma/client.ts';
import { columnsOf, filterFields, type DeadLetterFilter, type FilterOperator, type FilterReadColumn, type IntRange, type TimeRange } from '../db/deadLetterFilterFields.ts';
import { jsonContains, jsonEquals } from './jsonMatch.ts';

export type { DeadLetterFilter, FilterOperator, IntRange, TimeRange } from '../db/deadLetterFilterFields.ts';
export { DEAD_LETTER_FILTER_FIELDS, MAX_JSON, MAX_LIST, MAX_PATH, MAX_TEXT, MIN_ERROR_TEXT } from '../db/deadLetterFilterFields.ts';

/** The columns of a dead letter the filter reads. */
export type DeadLetterFilterRow = Pick<DeadLetter, FilterReadColumn>;

function inTimeRange(value: Date | null, range: TimeRange): boolean {
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

/** One operator on one row, with the same meaning as its SQL in deadLetterWhere.ts. */
function matchesOperator(op: FilterOperator, row: DeadLetterFilterRow, value: unknown): boolean {
  switch (op.kind) {
    case 'inList':
    case 'inEnum':
      return (value as readonly unknown[]).includes(row[op.column as FilterReadColumn]);
    case 'equals':
      return row[op.column as FilterReadColumn] === value;
    case 'textSearch': {
      const needle = (value as string).toLowerCase();
      return op.columns.some((column) => {
        const text = row[column];
        return text !== null && text.toLowerCase().includes(needle);
      });
    }
    case 'jsonContains':
      return jsonContains(row[op.column], value, true);
    case 'jsonPathEquals': {
      const { path, equals } = value as { path: string[]; equals: unknown };
      const at = payloadAt(row[op.column], path);
      return at.found && jsonEquals(at.value, equals);
    }
    case 'timeRange':
      return inTimeRange(row[op.column as FilterReadColumn] as Date | null, value as TimeRange);
    case 'intRange': {
      const { min, max } = value as IntRange;
      const n = row[op.column as FilterReadColumn] as number;
      return (min === undefined || n >= min) && (max === undefined || n <= max);
    }
  }
}

/** The columns a deleted dead letter's tombstone keeps (migration 20261124110000_delete_tombstones). */
const TOMBSTONE_COLUMNS: ReadonlySet<string> = new Set([
  'id', 'status', 'eventType', 'queue', 'source', 'orderingKey', 'errorKind', 'errorSignature', 'errorGroupId',
  'createdAt', 'updatedAt', 'nextAttemptAt', 'attempts',
] satisfies (keyof DeadLetterTombstone & FilterReadColumn)[]);

export type RemovedDeadLetterFilterRow = Pick<DeadLetterFilterRow, keyof DeadLetterTombstone & FilterReadColumn>;

/**
 * Whether a deletion belongs to a subscriber's stream. Criteria on columns a tombstone does not keep
 * (error text, payload) count as matching: a subscriber that may have shown the row learns that it
 * is gone, and one that never did gets a deletion of an id it does not know.
 */
export function matchesRemovedDeadLetter(row: RemovedDeadLetterFilterRow, filter: DeadLetterFilter): boolean {
  return filterFields().every(([field, { op }]) => {
    const value = filter[field];
    if (value === undefined || !columnsOf(op).every((column) => TOMBSTONE_COLUMNS.has(column))) return true;
    return matchesOperator(op, row as DeadLetterFilterRow, value);
  });
}

/**
 * Evaluates the filter in memory on one row, with the same meaning as `deadLetterWhereSql`
 * (used to filter subscription events without a query). Prisma truncates row times to
 * milliseconds, which keeps every comparison with a millisecond bound the same as in SQL.
 */
export function matchesDeadLetterFilter(row: DeadLetterFilterRow, filter: DeadLetterFilter): boolean {
  return filterFields().every(([field, { op }]) => filter[field] === undefined || matchesOperator(op, row, filter[field]));
}
