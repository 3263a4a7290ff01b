// Redrives: by id, the newest, what a redrive's guard sees now (the runner reads it through
// pauseRedriveByGuard in domain/redrives.ts), and what became of the events it requeued: counts by
// outcome, the error groups of its failures, and its events page by page.
import type { Db } from '../db/createDb.ts';
import { findDeadLettersByIds, type DeadLetterQuery } from '../db/models/deadLetters.ts';
import { findErrorGroups } from '../db/models/errorGroups.ts';
import { countRedriveOutcomes, type RedriveOutcomeCounts } from '../db/sql/countRedriveOutcomes.ts';
import { readRedriveGuardWindow, type GuardWindow } from '../db/sql/readRedriveGuardWindow.ts';
import { redriveEventIds } from '../db/sql/redriveEventIds.ts';
import { redriveFailureGroups } from '../db/sql/redriveFailureGroups.ts';
import type { RedriveOutcome } from '../db/sql/redriveOutcomeRows.ts';
import type { ErrorGroup } from '../generated/prisma/client.ts';
import { decodePageCursor, encodePageCursor, PageArgumentError } from './pageCursor.ts';

export { findRedrive as readRedrive, findRedriveOrThrow as readRedriveOrThrow, findRedrives as readRedrives } from '../db/models/redrives.ts';
export { isRedriveSettled } from '../domain/redrives.ts';
export { REDRIVE_OUTCOMES, type RedriveOutcome } from '../db/sql/redriveOutcomeRows.ts';
export type { RedriveOutcomeCounts };

export const DEFAULT_REDRIVE_EVENT_PAGE = 50;
export const MAX_REDRIVE_EVENT_PAGE = 500;
export const MAX_REDRIVE_FAILURE_GROUPS = 50;

/** The delivery outcomes the guard judges now: those since the redrive started or last resumed. */
export function readGuardWindowOf(db: Db, r: { id: bigint; guardAfterAttemptId: bigint; windowSize: number }): Promise<GuardWindow> {
  return readRedriveGuardWindow(db, { redriveId: r.id, afterAttemptId: r.guardAfterAttemptId, windowSize: r.windowSize });
}

/** The events this redrive requeued, counted by outcome now (one walk of its items). */
export function readRedriveOutcomes(db: Db, redriveId: bigint): Promise<RedriveOutcomeCounts> {
  return countRedriveOutcomes(db, redriveId);
}

export interface RedriveFailureGroup {
  group: ErrorGroup;
  failing: number;
  exhausted: number;
}

/** The error groups most of its FAILING and EXHAUSTED events belong to, largest first. */
export async function readRedriveFailureGroups(db: Db, redriveId: bigint, first: number): Promise<RedriveFailureGroup[]> {
  if (first < 1 || first > MAX_REDRIVE_FAILURE_GROUPS) throw new PageArgumentError(`first must be between 1 and ${MAX_REDRIVE_FAILURE_GROUPS}`, { argument: 'first' });
  const rows = await redriveFailureGroups(db, { redriveId, limit: first });
  const groups = new Map((await findErrorGroups(db, rows.map((r) => r.groupId))).map((g) => [g.id, g]));
  return rows.flatMap((r) => {
    const group = groups.get(r.groupId);
    return group ? [{ group, failing: r.failing, exhausted: r.exhausted }] : [];
  });
}

const ORDER = ['REDRIVE_EVENT_ID'];
const ID_KEY = /^[0-9]{1,19}$/;

export interface RedriveEventPageArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
  outcome?: RedriveOutcome | null;
}

/** A page of the stored events this redrive requeued, by id ascending, forward only. */
export async function readRedriveEventPage(db: Db, redriveId: bigint, args: RedriveEventPageArgs, query: DeadLetterQuery = {}) {
  if (args.last != null || args.before != null) throw new PageArgumentError('events pages forward only: use first and after', { argument: 'last' });
  const first = args.first ?? DEFAULT_REDRIVE_EVENT_PAGE;
  if (first < 1 || first > MAX_REDRIVE_EVENT_PAGE) throw new PageArgumentError(`first must be between 1 and ${MAX_REDRIVE_EVENT_PAGE}`, { argument: 'first' });
  const after = args.after != null ? decodePageCursor(args.after, ORDER, ID_KEY, 'after').id : 0n;
  const ids = await redriveEventIds(db, { redriveId, afterId: after, outcome: args.outcome ?? null, limit: first + 1 });
  const pageIds = ids.slice(0, first);
  const rows = pageIds.length === 0 ? [] : await findDeadLettersByIds(db, pageIds, query);
  const edges = rows.map((node) => ({ cursor: encodePageCursor(ORDER, { sortKey: node.id.toString(), id: node.id }), node }));
  return {
    edges,
    pageInfo: {
      startCursor: edges[0]?.cursor ?? null,
      // The last id asked for, not the last row found: one deleted meanwhile must not rewind the next page.
      endCursor: pageIds.length === 0 ? null : encodePageCursor(ORDER, { sortKey: pageIds.at(-1)!.toString(), id: pageIds.at(-1)! }),
      hasNextPage: ids.length > first,
      hasPreviousPage: after !== 0n,
    },
  };
}
