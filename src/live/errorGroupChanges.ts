// The errorGroupChanged streams of one process, fed by ONE shared reader. Lifecycle: idle (no
// subscriber, no reads) → the first watch() reads the baseline (the newest history id, and the
// groups changed in the last OVERLAP_MS, remembered without being sent) and starts the reader →
// each wake-up (NOTIFY lazarus_error_groups, sent at the commit of every change to error_groups:
// the folder's and operators'; a reconnect of the listener) or, without one, every pollIntervalMs,
// it reads once →
//   * history rows after the last one seen: a group's first row is CREATED, a regression REGRESSED,
//     any other move STATUS_CHANGED; these go at once;
//   * groups updated in the last OVERLAP_MS (the folder's and operators' transactions are single
//     statements, so updated_at is within milliseconds of their commit): a group whose counts moved
//     since the reader last saw it is COUNTS_CHANGED;
// and hands each change to every subscriber whose filter matches it, through the subscriber's own
// coalescer (COUNTS_CHANGED at most one per group per COALESCE_MS, held and replaced meanwhile, so
// the latest counts always arrive) and bounded queue (QUEUE_MAX) → the last subscriber leaves: the
// reader stops and forgets its state (the next subscriber reads a new baseline).
// A subscriber who joins a running reader shares its cursor, which is at or before the moment it
// joined: nothing committed after that is missed (a change from just before may be sent too).
// A failed read is logged and the next wake-up or tick reads again from the same cursor.
// Groups trail their members by the fold delay (domain/errorGroupFolding.ts), so an event reaches
// a subscriber about the fold delay + WAKE_GAP_MS after the commit that caused it.
import type { Db } from '../db/createDb.ts';
import type { ErrorGroupFilterSql } from '../db/sql/errorGroupPage.ts';
import { readErrorGroupActionsAfter, readErrorGroupsUpdatedSince, readLastErrorGroupActionId } from '../db/sql/readErrorGroupChanges.ts';
import { matchesErrorGroupFilter } from '../domain/errorGroups.ts';
import type { Logger } from '../logger.ts';
import { startPeriodic, type Periodic } from '../workers/periodic.ts';
import { createBoundedQueue, type BoundedQueue } from './boundedQueue.ts';
import type { ChangeListener } from './changeListener.ts';
import { createCoalescer, type Coalescer } from './coalesceByKey.ts';
import type { ErrorGroup } from '../generated/prisma/client.ts';
import type { ErrorGroupStatus } from '../generated/prisma/enums.ts';

/** How often the reader reads without wake-ups (a process without a LISTEN connection). */
export const POLL_INTERVAL_MS = 500;
/** How often it reads anyway when NOTIFY wakes it (a lost notification costs at most this). */
export const WOKEN_POLL_INTERVAL_MS = 2_000;
/** The shortest gap between two reads: a stream of folds costs at most 1000 / WAKE_GAP_MS reads a second. */
export const WAKE_GAP_MS = 50;
export const COALESCE_MS = 1_000;
const OVERLAP_MS = 5_000;
// Groups not seen changing for this long leave the reader's memory of their counts.
const FORGET_AFTER_MS = 60_000;
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

export interface ErrorGroupChangeSource {
  /** A stream of the changes of groups matching `filter`, from now on. */
  watch(filter: ErrorGroupFilterSql): Promise<BoundedQueue<ErrorGroupChangeEvent>>;
  /** Database reads since creation (baselines and polls): one per change, however many subscribers. */
  reads(): number;
  subscriberCount(): number;
  /** Ends every stream and stops the reader. */
  close(): Promise<void>;
}

export interface ErrorGroupChangeSourceOptions {
  db: Db;
  logger: Pick<Logger, 'warn'>;
  /** Subscribes to wake-ups (see errorGroupHints); without it the reader polls every pollIntervalMs. */
  wake?: (fn: () => void) => void;
  /** Default POLL_INTERVAL_MS, or WOKEN_POLL_INTERVAL_MS with `wake`. */
  pollIntervalMs?: number;
  coalesceMs?: number;
}

interface Subscriber {
  filter: ErrorGroupFilterSql;
  coalescer: Coalescer<ErrorGroupChangeEvent>;
  queue: BoundedQueue<ErrorGroupChangeEvent>;
}

/** Wake-ups for the reader from the LISTEN connection: each error_groups hint, and each (re)connect. */
export function errorGroupHints(listener: ChangeListener): (fn: () => void) => void {
  return (fn) => {
    listener.onErrorGroupsChanged(fn);
    listener.onConnected(fn);
  };
}

export function createErrorGroupChangeSource(o: ErrorGroupChangeSourceOptions): ErrorGroupChangeSource {
  const pollMs = o.pollIntervalMs ?? (o.wake ? WOKEN_POLL_INTERVAL_MS : POLL_INTERVAL_MS);
  const subscribers = new Set<Subscriber>();
  const counts = new Map<bigint, { counts: string; seenAt: number }>();
  const countsOf = (g: ErrorGroup) => `${g.totalCount}/${g.unresolvedCount}`;
  let reads = 0;
  let afterActionId = 0n;
  // The reader's state: starting (baseline in flight), running, or stopping; null when idle.
  let started: Promise<Periodic> | null = null;
  let stopping: Promise<void> = Promise.resolve();
  let wakeReader: (() => void) | null = null;
  // watch() calls waiting for the reader to start: the reader must not stop under them.
  let joining = 0;
  o.wake?.(() => wakeReader?.());

  const remember = (g: ErrorGroup, now: number) => counts.set(g.id, { counts: countsOf(g), seenAt: now });

  const baseline = async () => {
    reads += 1;
    counts.clear();
    afterActionId = await readLastErrorGroupActionId(o.db);
    const now = Date.now();
    for (const g of await readErrorGroupsUpdatedSince(o.db, new Date(now - OVERLAP_MS), [])) remember(g, now);
  };

  const send = (event: ErrorGroupChangeEvent, urgent: boolean) => {
    for (const s of subscribers) {
      if (matchesErrorGroupFilter(event.group, s.filter)) s.coalescer.push(String(event.group.id), event, urgent);
    }
  };

  const poll = async () => {
    if (subscribers.size === 0) return;
    reads += 1;
    const startedAt = Date.now();
    const actions = await readErrorGroupActionsAfter(o.db, afterActionId, ACTIONS_PER_POLL);
    const moved = new Set(actions.map((a) => a.groupId));
    const groups = await readErrorGroupsUpdatedSince(o.db, new Date(startedAt - OVERLAP_MS), [...moved]);
    const byId = new Map(groups.map((g) => [g.id, g]));
    for (const a of actions) {
      afterActionId = a.actionId;
      const group = byId.get(a.groupId);
      if (!group) continue; // gone (a TRUNCATE)
      remember(group, startedAt);
      const kind: ErrorGroupChangeKind = a.fromStatus === null ? 'CREATED' : a.reason?.startsWith('regressed') ? 'REGRESSED' : 'STATUS_CHANGED';
      send({ kind, group, fromStatus: a.fromStatus, reason: a.reason }, true);
    }
    for (const group of groups) {
      if (moved.has(group.id)) continue;
      const seen = counts.get(group.id);
      remember(group, startedAt);
      if (seen?.counts !== countsOf(group)) send({ kind: 'COUNTS_CHANGED', group, fromStatus: null, reason: null }, false);
    }
    for (const [id, seen] of counts) if (seen.seenAt < startedAt - FORGET_AFTER_MS) counts.delete(id);
    // A full page of history: read the rest at once.
    if (actions.length === ACTIONS_PER_POLL) wakeReader?.();
  };

  const start = async (): Promise<Periodic> => {
    await stopping;
    await baseline();
    return startPeriodic({
      name: 'errorGroupChanged reader',
      everyMs: pollMs,
      wakeGapMs: WAKE_GAP_MS,
      wake: (fn) => {
        wakeReader = fn;
        return () => {
          wakeReader = null;
        };
      },
      runOnce: poll,
      logger: o.logger,
    });
  };

  const stopIfIdle = () => {
    if (subscribers.size > 0 || joining > 0 || !started) return;
    const running = started;
    started = null;
    stopping = running.then((p) => p.stop(), () => {});
  };

  return {
    async watch(filter) {
      const subscriber: Subscriber = {
        filter,
        coalescer: createCoalescer<ErrorGroupChangeEvent>({ windowMs: o.coalesceMs ?? COALESCE_MS, emit: (e) => subscriber.queue.push([e]) }),
        queue: createBoundedQueue<ErrorGroupChangeEvent>(QUEUE_MAX, () => {
          subscriber.coalescer.close();
          subscribers.delete(subscriber);
          stopIfIdle();
        }),
      };
      // The baseline is read before the stream is handed out, so a change committed after the
      // subscription started is never taken for the past.
      started ??= start();
      const starting = started;
      joining += 1;
      try {
        await starting;
      } catch (error) {
        if (started === starting) started = null;
        throw error;
      } finally {
        joining -= 1;
      }
      subscribers.add(subscriber);
      return subscriber.queue;
    },
    reads: () => reads,
    subscriberCount: () => subscribers.size,
    async close() {
      for (const s of [...subscribers]) s.queue.return!();
      stopIfIdle();
      await stopping;
    },
  };
}
