// Retention: a pass deletes the finished events older than the retention age in short batches, one
// transaction each (purgeFinishedDeadLetters), one after another until a batch comes back short, the
// pass is stopped, or another process holds the retention lock. The service runs a pass every
// RETENTION_INTERVAL_MS on the periodic shape (startRetention, listed in jobs.ts), whether or not this
// process runs the retry loop; bench/retention.ts runs the same pass.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../db/createDb.ts';
import type { OutageLog } from '../db/outageLog.ts';
import { oldestPurgeable, purgeFinishedDeadLetters, type RetentionCursor } from '../db/sql/purgeFinishedDeadLetters.ts';
import { BatchSize, batchSizeOf } from '../domain/batchSize.ts';
import type { Logger } from '../logger.ts';
import { startPeriodic, type Periodic } from '../runtime/periodic.ts';

export const RETENTION_INTERVAL_MS = 60_000;

// Each purge batch is one short transaction (~8 ms for 50 events, bench:live): the live feed reads only changes
// below the oldest open transaction, so a 5,000-row batch (~0.4 s) stalled it.
export const RETENTION_BATCH = 50;
/**
 * The service's pass rests 3× each batch's time (at most a quarter of a connection). Back to back,
 * a pass at 10M events took 1,387 events/s but wrote ~23 KB of WAL per event (full-page images),
 * and ingest p99 rose 4–6× (bench:retention, docs/benchmarks.md "Session 21"). Resting, it still
 * removes several hundred a second, ten times what 100M events kept 30 days need on average.
 */
export const RETENTION_REST_RATIO = 3;
/**
 * The service's passes go on from where the previous pass ended, and every this many passes one
 * starts from the oldest event again, for the events a pass skipped (another transaction held
 * them) or that were written already old. Starting from the oldest steps over every entry earlier
 * passes deleted that VACUUM has not removed yet: at 1M events, 1.3 s for a batch after ~10,000
 * deletions (bench:live). That walk is made by a read before the pass's first batch
 * (oldestPurgeable), outside every deleting transaction.
 */
export const RETENTION_RESTART_EVERY = 10;

export interface RetentionPassOptions {
  /** Finished events that ended longer ago than this go. */
  olderThanMs: number;
  /** Events per batch (one transaction each): a number is fixed; default a BatchSize of at most RETENTION_BATCH. */
  batch?: number | BatchSize;
  /**
   * After each batch, rest this many times the batch's own duration before the next one, so the
   * pass uses at most 1 / (1 + restRatio) of a connection and slows down when the database does.
   * Default 0: back to back.
   */
  restRatio?: number;
  /** Ends the pass after the batch in flight (or during a rest). */
  signal?: AbortSignal;
  /** Called after each batch that ran, with the events it deleted and where the pass has got to. */
  onBatch?: (purged: number, cursor: RetentionCursor) => void;
  /** Where to start: a cursor an earlier pass reached; default the oldest event. */
  from?: RetentionCursor;
}

/** Runs one retention pass; returns the events it deleted. */
export async function runRetentionPass(db: Db, o: RetentionPassOptions): Promise<number> {
  const size = batchSizeOf(o.batch, RETENTION_BATCH);
  let total = 0;
  // From the oldest: found first by a read, so the deleting batches start at a live row.
  let cursor = o.from ?? (await oldestPurgeable(db, o.olderThanMs));
  if (cursor === null) return 0;
  for (;;) {
    const started = performance.now();
    const asked = size.rows;
    const result = await purgeFinishedDeadLetters(db, o.olderThanMs, asked, cursor);
    size.took(performance.now() - started);
    if (result === null) return total;
    const { purged } = result;
    cursor = result.cursor;
    total += purged;
    o.onBatch?.(purged, cursor);
    if (purged !== asked || o.signal?.aborted) return total;
    const restMs = (performance.now() - started) * (o.restRatio ?? 0);
    if (restMs > 0) await sleep(restMs, undefined, { signal: o.signal }).catch(() => {});
    if (o.signal?.aborted) return total;
  }
}

export interface RetentionDeps {
  db: Db;
  logger: Logger;
  /** Finished events that ended longer ago than this go. */
  olderThanMs: number;
  everyMs?: number;
  outage?: OutageLog;
}

/**
 * One pass per call, each from where the last one ended and every RETENTION_RESTART_EVERY-th
 * (the first included) from the oldest event: the service's retention job's runOnce, and the benches'.
 */
export function resumingRetentionPasses(db: Db, o: Omit<RetentionPassOptions, 'from' | 'signal'>): (signal?: AbortSignal) => Promise<number> {
  let passes = 0;
  let cursor: RetentionCursor | undefined;
  const batch = o.batch ?? new BatchSize({ max: RETENTION_BATCH });
  return (signal) => runRetentionPass(db, {
    ...o,
    batch,
    ...(signal && { signal }),
    ...(passes++ % RETENTION_RESTART_EVERY !== 0 && cursor && { from: cursor }),
    onBatch: (purged, reached) => {
      cursor = reached;
      o.onBatch?.(purged, reached);
    },
  });
}

/**
 * Runs a resting retention pass at once and then every `everyMs` (default RETENTION_INTERVAL_MS),
 * on resumingRetentionPasses. Besides the periodic events it emits `purged` (events deleted) after each batch.
 */
export function startRetention(deps: RetentionDeps): Periodic {
  // onBatch runs after the first purge statement returns, so `retention` is assigned by then.
  const runOnce = resumingRetentionPasses(deps.db, {
    olderThanMs: deps.olderThanMs,
    restRatio: RETENTION_REST_RATIO,
    onBatch: (purged) => retention.events.emit('purged', purged),
  });
  const retention: Periodic = startPeriodic({
    name: 'retention',
    everyMs: deps.everyMs ?? RETENTION_INTERVAL_MS,
    immediately: true,
    logger: deps.logger,
    ...(deps.outage && { onError: (error: unknown) => deps.outage!.failed(error, 'retention purge failed') }),
    runOnce,
  });
  return retention;
}
