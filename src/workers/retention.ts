// Retention: a pass deletes the finished events older than the retention age in short batches, one
// transaction each (purgeFinishedDeadLetters), one after another until a batch comes back short, the
// pass is stopped, or another process holds the retention lock. The retry loop runs a pass every
// retentionIntervalMs on the periodic shape (startPeriodic); bench/retention.ts runs the same pass.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../db/createDb.ts';
import { purgeFinishedDeadLetters } from '../db/sql/purgeFinishedDeadLetters.ts';

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

export interface RetentionPassOptions {
  /** Finished events that ended longer ago than this go. */
  olderThanMs: number;
  /** Events per batch (one transaction each); default RETENTION_BATCH. */
  batch?: number;
  /**
   * After each batch, rest this many times the batch's own duration before the next one, so the
   * pass uses at most 1 / (1 + restRatio) of a connection and slows down when the database does.
   * Default 0: back to back.
   */
  restRatio?: number;
  /** Ends the pass after the batch in flight (or during a rest). */
  signal?: AbortSignal;
  /** Called after each batch that ran, with the events it deleted. */
  onBatch?: (purged: number) => void;
}

/** Runs one retention pass; returns the events it deleted. */
export async function runRetentionPass(db: Db, o: RetentionPassOptions): Promise<number> {
  const batch = o.batch ?? RETENTION_BATCH;
  let total = 0;
  for (;;) {
    const started = performance.now();
    const purged = await purgeFinishedDeadLetters(db, o.olderThanMs, batch);
    if (purged === null) return total;
    total += purged;
    o.onBatch?.(purged);
    if (purged !== batch || o.signal?.aborted) return total;
    const restMs = (performance.now() - started) * (o.restRatio ?? 0);
    if (restMs > 0) await sleep(restMs, undefined, { signal: o.signal }).catch(() => {});
    if (o.signal?.aborted) return total;
  }
}
