// Per-subscriber streams over the shared change feed. Each subscriber filters the batches the
// feed already read (no database read per subscriber) into its own bounded queue, with the same
// matcher the filter's SQL mirrors (domain/deadLetterFilter.ts); counts come from reads/.
import type { Db } from '../db/createDb.ts';
import { matchesDeadLetterFilter, matchesRemovedDeadLetter, type DeadLetterFilter } from '../domain/deadLetterFilter.ts';
import { countByStatus, type StatusCount } from '../reads/stats.ts';
import { createBoundedQueue, SHAREABLE, tooSlowError, type BoundedQueue } from './boundedQueue.ts';
import { compareCursors, type ChangeCursor } from './changeCursor.ts';
import type { DeadLetterChangeEvent, DeliveryAttemptEvent, LiveFeed } from './liveEvents.ts';

export const STATS_THROTTLE_MS = 1_000;

export function deadLetterChanges(
  feed: LiveFeed,
  filter: DeadLetterFilter,
  options: { onlyNew: boolean; after?: ChangeCursor },
): BoundedQueue<DeadLetterChangeEvent> {
  const select = (events: DeadLetterChangeEvent[]) =>
    events.filter((e) => (!options.onlyNew || e.isNew) &&
      (e.deadLetter ? matchesDeadLetterFilter(e.deadLetter, filter) : matchesRemovedDeadLetter(e.removed!, filter)));
  let buffered: DeadLetterChangeEvent[] | null = options.after ? [] : null;
  // Nothing at or before the last cursor sent (or asked for) goes out again: replayed and live
  // events overlap there, and a feed that started recently may still publish older changes.
  let sentUpTo: ChangeCursor | undefined = options.after;
  const fresh = (events: DeadLetterChangeEvent[]) => (sentUpTo ? events.filter((e) => compareCursors(e.cursor, sentUpTo!) > 0) : events);
  const queue = createBoundedQueue<DeadLetterChangeEvent>(feed.maxQueuedEvents, () => off());
  // Subscribe before replaying, so nothing published meanwhile is lost.
  const off = feed.events.onBatch((batch) => {
    if (!buffered) return queue.push(select(fresh(batch.deadLetters)));
    buffered.push(...batch.deadLetters);
    if (buffered.length > feed.maxQueuedEvents) queue.fail(tooSlowError(feed.maxQueuedEvents));
  });
  if (options.after) void replay(feed, options.after, queue, select).then(
    (last) => {
      sentUpTo = last;
      const live = fresh(buffered!);
      buffered = null;
      queue.push(select(live));
    },
    (error: unknown) => queue.fail(error as Error),
  );
  // Without a cursor every subscriber with this filter sees the same stream from now on.
  return options.after ? queue : Object.assign(queue, { [SHAREABLE]: true });
}

async function replay(
  feed: LiveFeed,
  after: ChangeCursor,
  queue: BoundedQueue<DeadLetterChangeEvent>,
  select: (events: DeadLetterChangeEvent[]) => DeadLetterChangeEvent[],
): Promise<ChangeCursor> {
  let last = after;
  for await (const events of feed.replayDeadLetterChanges(after)) {
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
