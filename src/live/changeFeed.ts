// The change feed: reads what changed, by cursor, and publishes it once for every subscriber.
//
// Lifecycle: created → start() → running → stop() → stopped. While running, a read is triggered
// by every NOTIFY hint, every (re)connect of the listener (notifications sent while it was away
// are lost) and a fallback timer; reads never overlap, a trigger during a read schedules one
// more, and back-to-back reads are spaced by a gap that grows with the subscriber count. A failed
// read is logged and retried by the next trigger; the feed itself never throws.
//
// Why a cursor and a horizon: NOTIFY is only a wake-up; the truth is each row's stamp
// (change_xid, change_id). The feed reads rows with stamp > cursor and change_xid below the
// snapshot's xmin, so a transaction that took its change ids early but commits late is not
// skipped: its rows are read once it has ended. Stamps are per row, so a row changed twice between
// two reads is seen once, in its latest state (intermediate states coalesce).
//
// Error groups ride the same feed (migration 20261207100000_error_groups_on_change_feed): status
// moves and count changes carry the same stamp, so errorGroupChanged resumes by cursor like
// deadLetterChanged, and one hint channel, one reader and one cursor serve every subscription.
import { readChangeHorizon } from '../db/sql/readChangeHorizon.ts';
import { readDeadLetterChanges, type DeadLetterChangeRow } from '../db/sql/readDeadLetterChanges.ts';
import { readDeliveryAttemptChanges, type DeliveryAttemptChangeRow } from '../db/sql/readDeliveryAttemptChanges.ts';
import { readTombstoneChanges, type TombstoneChangeRow } from '../db/sql/readTombstoneChanges.ts';
import { readErrorGroupChanges, type ErrorGroupChangeRow } from '../db/sql/readErrorGroupChanges.ts';
import type { Db } from '../db/createDb.ts';
import { compareCursors, type ChangeCursor } from './changeCursor.ts';
import type { ChangeBatch, DeadLetterChangeEvent, ErrorGroupChangeEvent, LiveFeed, LivePubSub } from './liveEvents.ts';
import type { Logger } from '../logger.ts';
import { createOutageLog, type OutageLog } from '../db/outageLog.ts';
import { DEFAULT_LIVE_POLL_MS } from '../config.ts';
import type { ChangeListener } from './changeListener.ts';

export const DEFAULT_BATCH_SIZE = 500;
export const DEFAULT_MAX_QUEUED_EVENTS = 10_000;
// After every hint, re-read soon rather than waiting for the fallback timer: 5 ms, doubling up to
// 250 ms. Once for writers that sent no hint of their own because another open transaction held
// the turn (migration 20261208100000_coalesced_change_hints) and committed after the read; and for
// as long as a hint's rows are still above the horizon (an older transaction is open).
const CHASE_MIN_MS = 5;
const CHASE_MAX_MS = 250;
// Under a steady stream of hints, reads are spaced by 0.125 ms per open subscription, at most
// 25 ms: every read is written to every subscriber's stream, so with 200 subscribers one read per
// hint meant 100k+ socket writes a second. A hint after a quiet spell is read at once.
const READ_GAP_PER_LISTENER_MS = 0.125;
const MAX_READ_GAP_MS = 25;

export interface ChangeFeedDeps {
  db: Db;
  listener: ChangeListener;
  events: LivePubSub;
  logger: Logger;
  /** Shared with the service's other loops, so an outage is logged once; default: its own. */
  outage?: OutageLog;
  /** Reads by cursor this often when no hint wakes the feed (Config.live.pollMs). Default 1000 ms. */
  fallbackPollMs?: number;
  batchSize?: number;
  maxQueuedEvents?: number;
}

export interface ChangeFeed extends LiveFeed {
  /** Sets the cursor to the current horizon, then reads on every trigger. */
  start(): Promise<void>;
  stop(): Promise<void>;
  cursor(): ChangeCursor;
  /** Resolves after the next complete read (for tests and benchmarks). */
  caughtUp(): Promise<void>;
  /** How often to read without hints; shortened while notifications cannot be trusted. */
  setFallbackPollMs(ms: number): void;
  stats(): ChangeFeedStats;
}

export interface ChangeFeedStats {
  /** Changes published since start. */
  published: number;
  /** Catch-up reads after the listener (re)connected. */
  catchUps: number;
  /** Seconds since the oldest hint whose changes are not published yet (0 when caught up). */
  lagSeconds: number;
}

export function createChangeFeed(deps: ChangeFeedDeps): ChangeFeed {
  const logger = deps.logger.child({ component: 'changeFeed' });
  const outage = deps.outage ?? createOutageLog(logger);
  const batchSize = deps.batchSize ?? DEFAULT_BATCH_SIZE;
  let cursor: ChangeCursor = { xid: 0n, changeId: 0n };
  let running = false;
  let reading: Promise<void> | null = null;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let chaseMs = CHASE_MIN_MS;
  // Reads left after the last hint (CHASE_MIN_MS doubling to CHASE_MAX_MS).
  let trailing = false;
  let hintedMax = 0n;
  let seenMax = 0n;
  let waiters: (() => void)[] = [];
  let published = 0;
  let catchUps = 0;
  let fallbackPollMs = deps.fallbackPollMs ?? DEFAULT_LIVE_POLL_MS;
  // When the oldest hint not yet covered by a read arrived (for the lag metric).
  let behindSince: number | null = null;
  let lastReadAt = -Infinity;

  // The tables (dead letters, their tombstones, attempts, error groups) are read at once, each
  // statement below its own snapshot's horizon; rows are kept only below the lowest of those, and,
  // when a table filled its limit, only up to its last row, so what is published is always a
  // complete prefix of the changes after the cursor.
  const readBatch = async (after: ChangeCursor, parts: { letters: boolean; attempts: boolean; groups: boolean }) => {
    const range = { afterXid: after.xid, afterChangeId: after.changeId, limit: batchSize };
    const [letters, removed, attempts, groups] = await Promise.all([
      parts.letters ? readDeadLetterChanges(deps.db, range) : null,
      parts.letters ? readTombstoneChanges(deps.db, range) : null,
      parts.attempts ? readDeliveryAttemptChanges(deps.db, range) : null,
      parts.groups ? readErrorGroupChanges(deps.db, range) : null,
    ]);
    const reads = [letters, removed, attempts, groups].filter((r) => r !== null);
    const horizon = reads.map((r) => r.horizon).reduce((a, b) => (b < a ? b : a));
    const bound = reads.filter((r) => r.rows.length === batchSize).map((r) => stampOf(r.rows.at(-1)!)).sort(compareCursors)[0];
    const keep = <T extends { changeXid: string; changeId: bigint }>(rows: T[] = []) =>
      rows.filter((row) => BigInt(row.changeXid) < horizon && (!bound || compareCursors(stampOf(row), bound) <= 0));
    return { letters: keep(letters?.rows), removed: keep(removed?.rows), attempts: keep(attempts?.rows), groups: keep(groups?.rows), more: bound !== undefined, horizon };
  };

  /**
   * One kind of change after `after`, a batch at a time, until caught up (a cursor subscription's
   * replay). The subscriber already takes the live batches, which start at the feed's cursor now,
   * so the replay goes on until a read has seen past that cursor. A read's horizon can be below it
   * for a moment: the horizon counts as this database's any transaction it cannot place, such as
   * one in another database that ended between the snapshot and the look at pg_stat_activity. A
   * replay that stopped at such a read left a gap (CI saw a resumed subscriber get nothing).
   */
  async function* replay<E extends { cursor: ChangeCursor }>(
    after: ChangeCursor, parts: Parameters<typeof readBatch>[1], toEvents: (batch: Awaited<ReturnType<typeof readBatch>>) => E[],
  ): AsyncGenerator<E[]> {
    const until = cursor;
    let from = after;
    for (let waitMs = CHASE_MIN_MS; ; ) {
      const batch = await readBatch(from, parts);
      const events = toEvents(batch);
      if (events.length > 0) {
        yield events;
        from = events.at(-1)!.cursor;
        waitMs = CHASE_MIN_MS;
        if (batch.more) continue;
      }
      // Everything below the horizon is in: done once that reaches the cursor the live batches start after.
      if (compareCursors({ xid: batch.horizon, changeId: 0n }, until) >= 0 || !running) return;
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      waitMs = Math.min(waitMs * 2, CHASE_MAX_MS);
    }
  }

  const readOnce = async (): Promise<number> => {
    if (deps.events.listenerCount() === 0) {
      // Nobody subscribed: move past everything that has ended (one small query) instead of
      // reading rows nobody would receive. A subscriber that arrives later starts from there.
      const horizon: ChangeCursor = { xid: await readChangeHorizon(deps.db), changeId: 0n };
      // A subscriber that arrived while the horizon was read may already be waiting for a row the
      // horizon's snapshot covers: then the cursor stays, and the next read (at once) serves it.
      if (deps.events.listenerCount() > 0) {
        again = true;
        return 0;
      }
      if (compareCursors(horizon, cursor) > 0) cursor = horizon;
      if (hintedMax > seenMax) seenMax = hintedMax;
      return 0;
    }
    let total = 0;
    for (;;) {
      const { letters, removed, attempts, groups, more } = await readBatch(cursor, ALL_PARTS);
      const rows = [...letters, ...removed, ...attempts, ...groups];
      if (rows.length === 0) return total;
      const batch = { ...(await toBatch(letters, removed, attempts)), errorGroups: groups.map(toErrorGroupEvent) };
      cursor = rows.map(stampOf).sort(compareCursors).at(-1)!;
      for (const row of rows) if (row.changeId > seenMax) seenMax = row.changeId;
      total += rows.length;
      published += rows.length;
      deps.events.publish(batch);
      if (!more) return total;
    }
  };

  const toBatch = async (letters: DeadLetterChangeRow[], removed: TombstoneChangeRow[], attempts: DeliveryAttemptChangeRow[]): Promise<Omit<ChangeBatch, 'errorGroups'>> => {
    const parents = new Map(letters.map((d) => [d.id, d]));
    const missing = [...new Set(attempts.map((a) => a.deadLetterId).filter((id) => !parents.has(id)))];
    if (missing.length) {
      const rows = await deps.db.deadLetter.findMany({ where: { id: { in: missing } } });
      for (const row of rows) parents.set(row.id, row as unknown as DeadLetterChangeRow);
    }
    return {
      deadLetters: deadLetterEvents(letters, removed),
      attempts: attempts.map((a) => ({ cursor: stampOf(a), attempt: a, deadLetter: parents.get(a.deadLetterId) ?? null })),
    };
  };

  const trigger = () => {
    if (!running) return;
    if (reading) {
      again = true;
      return;
    }
    reading = (async () => {
      do {
        again = false;
        const gap = Math.min(MAX_READ_GAP_MS, deps.events.listenerCount() * READ_GAP_PER_LISTENER_MS);
        const wait = lastReadAt + gap - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        lastReadAt = performance.now();
        try {
          const n = await readOnce();
          outage.answered();
          if (n > 0) logger.debug({ changes: n }, 'published changes');
        } catch (error) {
          outage.failed(error, 'change feed read failed; retrying on the next trigger', { component: 'changeFeed' });
        }
      } while (again && running);
      reading = null;
      for (const resolve of waiters.splice(0)) resolve();
      if (seenMax >= hintedMax) behindSince = null;
      const fallbackMs = fallbackPollMs;
      // A forged hint can name a change id that never comes: then this polls every CHASE_MAX_MS.
      if (hintedMax > seenMax || trailing) {
        trailing = chaseMs < CHASE_MAX_MS;
        schedule(Math.min(chaseMs, fallbackMs));
        chaseMs = Math.min(chaseMs * 2, CHASE_MAX_MS);
      } else schedule(fallbackMs);
    })();
  };

  const schedule = (ms: number) => {
    clearTimeout(timer);
    if (running) timer = setTimeout(trigger, ms);
  };

  deps.listener.onHint((hint) => {
    // Every fold sends one: without a group subscriber it would only cost reads (the rows are read
    // with the next dead letter hint or the fallback timer all the same).
    if (hint.table === 'error_groups' && deps.events.groupListenerCount() === 0) return;
    if (hint.maxChangeId > hintedMax) hintedMax = hint.maxChangeId;
    if (hintedMax > seenMax) behindSince ??= Date.now();
    chaseMs = CHASE_MIN_MS;
    trailing = true;
    trigger();
  });
  deps.listener.onConnected(() => {
    if (!running) return;
    const before = published;
    catchUps += 1;
    const done = new Promise<void>((resolve) => waiters.push(resolve));
    trigger();
    void done.then(() => logger.info({ changes: published - before, catchUps }, 'caught up after the listener (re)connected'));
  });

  return {
    events: deps.events,
    maxQueuedEvents: deps.maxQueuedEvents ?? DEFAULT_MAX_QUEUED_EVENTS,
    async start() {
      cursor = { xid: await readChangeHorizon(deps.db), changeId: 0n };
      running = true;
      schedule(fallbackPollMs);
    },
    async stop() {
      running = false;
      clearTimeout(timer);
      await reading;
      for (const resolve of waiters.splice(0)) resolve();
    },
    cursor: () => cursor,
    setFallbackPollMs(ms) {
      if (ms === fallbackPollMs) return;
      fallbackPollMs = ms;
      if (running && !reading) schedule(ms);
    },
    stats: () => ({ published, catchUps, lagSeconds: behindSince === null ? 0 : (Date.now() - behindSince) / 1000 }),
    caughtUp() {
      const done = new Promise<void>((resolve) => waiters.push(resolve));
      trigger();
      return done;
    },
    replayDeadLetterChanges: (after) =>
      replay(after, { letters: true, attempts: false, groups: false }, (b) => deadLetterEvents(b.letters, b.removed)),
    replayErrorGroupChanges: (after) =>
      replay(after, { letters: false, attempts: false, groups: true }, (b) => b.groups.map(toErrorGroupEvent)),
  };
}

const ALL_PARTS = { letters: true, attempts: true, groups: true };

function toErrorGroupEvent(row: ErrorGroupChangeRow): ErrorGroupChangeEvent {
  const kind = !row.isMove ? 'COUNTS_CHANGED' : row.fromStatus === null ? 'CREATED' : row.reason?.startsWith('regressed') ? 'REGRESSED' : 'STATUS_CHANGED';
  return { cursor: stampOf(row), kind, group: row.group, fromStatus: row.fromStatus, reason: row.reason };
}

function stampOf(row: { changeXid: string; changeId: bigint }): ChangeCursor {
  return { xid: BigInt(row.changeXid), changeId: row.changeId };
}

/** Changes and deletions of dead letters, merged in cursor order. */
function deadLetterEvents(letters: DeadLetterChangeRow[], removed: TombstoneChangeRow[]): DeadLetterChangeEvent[] {
  const events: DeadLetterChangeEvent[] = [
    ...letters.map((row) => ({ cursor: stampOf(row), deadLetter: row, removed: null, isNew: row.version === 0 })),
    ...removed.map((row) => ({ cursor: stampOf(row), deadLetter: null, removed: row, isNew: false })),
  ];
  return removed.length ? events.sort((a, b) => compareCursors(a.cursor, b.cursor)) : events;
}
