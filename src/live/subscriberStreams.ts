// Per-subscriber streams over the shared change feed (dead letters, attempts, error groups). Each
// subscriber filters the batches the feed already read (no database read per subscriber) into its
// own bounded queue, with the same matcher the filter's SQL mirrors (domain/deadLetterFilter.ts,
// domain/errorGroups.ts); counts come from reads/.
import type { Db } from '../db/createDb.ts';
import { matchesDeadLetterFilter, matchesRemovedDeadLetter, type DeadLetterFilter } from '../domain/deadLetterFilter.ts';
import { countByStatus, type StatusCount } from '../reads/stats.ts';
import { createBoundedQueue, SHAREABLE, tooSlowError, type BoundedQueue } from './boundedQueue.ts';
import { compareCursors, type ChangeCursor } from './changeCursor.ts';
import type { ChangeBatch, DeadLetterChangeEvent, DeliveryAttemptEvent, ErrorGroupChangeEvent, LiveFeed } from './liveEvents.ts';
import type { ErrorGroupFilterSql } from '../db/sql/errorGroupPage.ts';
import { matchesErrorGroupFilter } from '../domain/errorGroups.ts';

export const STATS_THROTTLE_MS = 1_000;

export function deadLetterChanges(
  feed: LiveFeed,
  filter: DeadLetterFilter,
  options: { onlyNew: boolean; after?: ChangeCursor },
): BoundedQueue<DeadLetterChangeEvent> {
  return cursorStream(feed, {
    pick: (batch) => batch.deadLetters,
    replay: (after) => feed.replayDeadLetterChanges(after),
    select: (events) => events.filter((e) => (!options.onlyNew || e.isNew) &&
      (e.deadLetter ? matchesDeadLetterFilter(e.deadLetter, filter) : matchesRemovedDeadLetter(e.removed!, filter))),
    after: options.after,
  });
}

/** Error group changes matching `filter`; with `after`, first those since that cursor. */
export function errorGroupChanges(feed: LiveFeed, filter: ErrorGroupFilterSql, after?: ChangeCursor): BoundedQueue<ErrorGroupChangeEvent> {
  return cursorStream(feed, {
    pick: (batch) => batch.errorGroups,
    replay: (from) => feed.replayErrorGroupChanges(from),
    select: (events) => events.filter((e) => matchesErrorGroupFilter(e.group, filter)),
    after,
    errorGroups: true,
  });
}

interface CursorStreamOptions<E extends { cursor: ChangeCursor }> {
  pick: (batch: ChangeBatch) => E[];
  replay: (after: ChangeCursor) => AsyncIterable<E[]>;
  select: (events: E[]) => E[];
  after: ChangeCursor | undefined;
  errorGroups?: boolean;
}

/** The feed's events of one kind from now on; with `after`, replayed from there first, without gaps or duplicates. */
function cursorStream<E extends { cursor: ChangeCursor }>(feed: LiveFeed, o: CursorStreamOptions<E>): BoundedQueue<E> {
  let buffered: E[] | null = o.after ? [] : null;
  // Nothing at or before the last cursor sent (or asked for) goes out again: replayed and live
  // events overlap there, and a feed that started recently may still publish older changes.
  let sentUpTo: ChangeCursor | undefined = o.after;
  const fresh = (events: E[]) => (sentUpTo ? events.filter((e) => compareCursors(e.cursor, sentUpTo!) > 0) : events);
  const queue = createBoundedQueue<E>(feed.maxQueuedEvents, () => off());
  // Subscribe before replaying, so nothing published meanwhile is lost.
  const off = feed.events.onBatch((batch) => {
    if (!buffered) return queue.push(o.select(fresh(o.pick(batch))));
    buffered.push(...o.pick(batch));
    if (buffered.length > feed.maxQueuedEvents) queue.fail(tooSlowError(feed.maxQueuedEvents));
  }, { errorGroups: o.errorGroups });
  if (o.after) void replay(feed, o.replay(o.after), o.after, queue, o.select).then(
    (last) => {
      sentUpTo = last;
      const live = fresh(buffered!);
      buffered = null;
      queue.push(o.select(live));
    },
    (error: unknown) => queue.fail(error as Error),
  );
  // Without a cursor every subscriber with this filter sees the same stream from now on.
  return o.after ? queue : Object.assign(queue, { [SHAREABLE]: true });
}

async function replay<E extends { cursor: ChangeCursor }>(
  feed: LiveFeed,
  batches: AsyncIterable<E[]>,
  after: ChangeCursor,
  queue: BoundedQueue<E>,
  select: (events: E[]) => E[],
): Promise<ChangeCursor> {
  let last = after;
  for await (const events of batches) {
    if (queue.isClosed) break;
    queue.push(select(events));
    last = events.at(-1)!.cursor;
    // Replay at the reader's pace: a long backlog must not count as a slow subscriber.
    while (queue.size > feed.maxQueuedEvents / 2 && !queue.isClosed) await new Promise((r) => setTimeout(r, 5));
  }
  return last;
}

export function deliveryAttemptsFinished(feed: LiveFeed, filter: DeadLetterFilter): BoundedQueue<DeliveryAttemptEvent> {
  const isEmpty = Object.keys(filter).length === 0;
  const queue = createBoundedQueue<DeliveryAttemptEvent>(feed.maxQueuedEvents, () => off());
  const off = feed.events.onBatch((batch) =>
    queue.push(batch.attempts.filter((e) => (e.deadLetter ? matchesDeadLetterFilter(e.deadLetter, filter) : isEmpty))),
  );
  return Object.assign(queue, { [SHAREABLE]: true });
}

export interface DeadLetterCounts {
  total: number;
  byStatus: StatusCount[];
}

/** Counts now, then again after dead letter changes, at most once per STATS_THROTTLE_MS. */
export function deadLetterStats(feed: LiveFeed, db: Db, filter: DeadLetterFilter): BoundedQueue<DeadLetterCounts> {
  // The hourly rollups answer most filters in milliseconds; a scan of every matching row, a second
  // apart, would cost each subscriber a full count at a million rows.
  const count = () => countByStatus(db, filter);
  let timer: NodeJS.Timeout | undefined;
  let lastAt = 0;
  let inFlight = false;
  let dirty = false;
  const queue = createBoundedQueue<DeadLetterCounts>(10, () => {
    off();
    clearTimeout(timer);
  });
  const run = async () => {
    timer = undefined;
    if (queue.isClosed) return;
    inFlight = true;
    lastAt = Date.now();
    try {
      const byStatus = await count();
      queue.push([{ total: byStatus.reduce((n, s) => n + s.count, 0), byStatus }]);
    } catch (error) {
      queue.fail(error as Error);
    }
    inFlight = false;
    if (dirty) request();
  };
  const request = () => {
    dirty = inFlight;
    if (timer || inFlight || queue.isClosed) return;
    timer = setTimeout(run, Math.max(0, lastAt + STATS_THROTTLE_MS - Date.now()));
  };
  const off = feed.events.onBatch((batch) => {
    if (batch.deadLetters.length) request();
  });
  request();
  return queue;
}
