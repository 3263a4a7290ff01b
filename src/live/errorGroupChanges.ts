// The errorGroupChanged stream of one subscriber. Lifecycle: start (baseline: the newest history
// id, and the groups changed in the last OVERLAP_MS, remembered without being sent) → poll every
// POLL_INTERVAL_MS until the subscriber leaves → close. Each poll reads
//   * history rows after the last one seen: a group's first row is CREATED, a regression REGRESSED,
//     any other move STATUS_CHANGED; these go at once;
//   * groups updated in the last OVERLAP_MS (the folder's and operators' transactions are single
//     statements, so updated_at is within milliseconds of their commit): a group whose counts moved
//     since this stream last saw it is COUNTS_CHANGED, at most one per group per COALESCE_MS
//     (held and replaced meanwhile, so the latest counts always arrive).
// Groups trail their members by the fold delay (domain/errorGroupFolding.ts), so an event reaches
// a subscriber about fold delay + poll interval after the commit that caused it.
import type { Db } from '../db/createDb.ts';
import type { ErrorGroupFilterSql } from '../db/sql/errorGroupPage.ts';
import { readErrorGroupActionsAfter, readErrorGroupsUpdatedSince, readLastErrorGroupActionId } from '../db/sql/readErrorGroupChanges.ts';
import { matchesErrorGroupFilter } from '../domain/errorGroups.ts';
import { createBoundedQueue, type BoundedQueue } from './boundedQueue.ts';
import { createCoalescer } from './coalesceByKey.ts';
import type { ErrorGroup } from '../generated/prisma/client.ts';
import type { ErrorGroupStatus } from '../generated/prisma/enums.ts';

export const POLL_INTERVAL_MS = 500;
export const COALESCE_MS = 1_000;
const OVERLAP_MS = 5_000;
const ACTIONS_PER_POLL = 1_000;
const QUEUE_MAX = 1_000;

export type ErrorGroupChangeKind = 'CREATED' | 'STATUS_CHANGED' | 'REGRESSED' | 'COUNTS_CHANGED';

export interface ErrorGroupChangeEvent {
  kind: ErrorGroupChangeKind;
  group: ErrorGroup;
  /** For status moves: the status it moved from (null for CREATED). */
  fromStatus: ErrorGroupStatus | null;
  reason: string | null;
}

export interface ErrorGroupChangeOptions {
  pollIntervalMs?: number;
  coalesceMs?: number;
}

export async function watchErrorGroupChanges(db: Db, filter: ErrorGroupFilterSql, o: ErrorGroupChangeOptions = {}): Promise<BoundedQueue<ErrorGroupChangeEvent>> {
  const pollMs = o.pollIntervalMs ?? POLL_INTERVAL_MS;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const queue = createBoundedQueue<ErrorGroupChangeEvent>(QUEUE_MAX, () => {
    closed = true;
    clearTimeout(timer);
    coalescer.close();
  });
  const coalescer = createCoalescer<ErrorGroupChangeEvent>({ windowMs: o.coalesceMs ?? COALESCE_MS, emit: (e) => queue.push([e]) });
  const counts = new Map<bigint, string>();
  const countsOf = (g: ErrorGroup) => `${g.totalCount}/${g.unresolvedCount}`;
  let afterActionId = 0n;

  const poll = async () => {
    const startedAt = Date.now();
    const actions = await readErrorGroupActionsAfter(db, afterActionId, ACTIONS_PER_POLL);
    const moved = new Set(actions.map((a) => a.groupId));
    const groups = await readErrorGroupsUpdatedSince(db, new Date(startedAt - OVERLAP_MS), [...moved]);
    const byId = new Map(groups.map((g) => [g.id, g]));
    for (const a of actions) {
      afterActionId = a.actionId;
      const group = byId.get(a.groupId);
      if (!group) continue; // gone (a TRUNCATE)
      counts.set(group.id, countsOf(group));
      if (!matchesErrorGroupFilter(group, filter)) continue;
      const kind: ErrorGroupChangeKind = a.fromStatus === null ? 'CREATED' : a.reason?.startsWith('regressed') ? 'REGRESSED' : 'STATUS_CHANGED';
      coalescer.push(String(group.id), { kind, group, fromStatus: a.fromStatus, reason: a.reason }, true);
    }
    for (const group of groups) {
      if (moved.has(group.id) || counts.get(group.id) === countsOf(group)) continue;
      counts.set(group.id, countsOf(group));
      if (matchesErrorGroupFilter(group, filter)) coalescer.push(String(group.id), { kind: 'COUNTS_CHANGED', group, fromStatus: null, reason: null }, false);
    }
  };

  const loop = async () => {
    if (closed) return;
    try {
      await poll();
    } catch (error) {
      queue.fail(error as Error);
      return;
    }
    if (!closed) timer = setTimeout(loop, pollMs);
  };

  // The baseline is read before the stream is handed out, so a change committed after the
  // subscription started is never taken for the past.
  afterActionId = await readLastErrorGroupActionId(db);
  for (const g of await readErrorGroupsUpdatedSince(db, new Date(Date.now() - OVERLAP_MS), [])) counts.set(g.id, countsOf(g));
  timer = setTimeout(loop, pollMs);
  return queue;
}
