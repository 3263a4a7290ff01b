// The one filter shared by queries, stats, bulk mutations and subscriptions: its type (with its SQL,
// in db/sql/deadLetterWhere.ts) and `matchesDeadLetterFilter`, which evaluates it in memory for
// subscriptions, agreeing with the SQL.
import type { DeadLetter } from '../generated/prisma/client.ts';
import type { DeadLetterFilter, TimeRange } from '../db/sql/deadLetterWhere.ts';
import { jsonContains, jsonEquals } from './jsonMatch.ts';

export type { DeadLetterFilter, IntRange, TimeRange } from '../db/sql/deadLetterWhere.ts';

/** The columns of a dead letter the filter reads. */
export type DeadLetterFilterRow = Pick<
  DeadLetter,
  | 'id' | 'status' | 'eventType' | 'queue' | 'source' | 'orderingKey' | 'errorKind' | 'errorMessage' | 'errorStack'
  | 'errorSignature' | 'errorGroupId' | 'payload' | 'createdAt' | 'updatedAt' | 'nextAttemptAt' | 'attempts'
>;

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
  if (filter.groupId !== undefined && row.errorGroupId !== filter.groupId) return false;
  return true;
}
