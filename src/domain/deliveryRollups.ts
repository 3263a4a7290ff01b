// Delivery charts from the delivery rollup ledger (migration 20261206120000_delivery_rollups):
// folding and trimming it, and the percentile rule over its fixed latency buckets.
import type { Db } from '../db/createDb.ts';
import { coarsenDeliveryRollups, compactDeliveryRollupBatch, trimDeliveryRollups } from '../db/sql/deliveryRollups.ts';
import { BatchSize, batchSizeOf } from './batchSize.ts';
import { COMPACTION_BATCH_ROWS } from './statsRollups.ts';

/**
 * The latency buckets' lower bounds in ms: round(2^(k/4)) for k = 0..80, deduplicated. Bucket 0 is
 * [0, 1); bucket i (1..75) is [LATENCY_BOUNDS_MS[i-1], LATENCY_BOUNDS_MS[i]); bucket 76 is 1048576 ms
 * and over. Must equal the array in lazarus_latency_bucket.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = Array.from(new Set(Array.from({ length: 81 }, (_, k) => Math.round(2 ** (k / 4)))));

/** How far a reported percentile may be from the true nearest-rank one, relative to it, below the last bound. */
export const LATENCY_ERROR_BOUND = 0.095;

/** How long the ledger keeps a minute: the charts read the last day at most. */
export const DELIVERY_ROLLUP_KEEP_MS = 2 * 86_400_000;

const TRIM_BATCH_ROWS = 1_000;

/**
 * The day chart's step, which minutes older than COARSEN_AFTER_MS are folded into: the day is read
 * from 96 rows per group instead of 1,440 (145,000 ledger rows at 200,000 attempts a day read in
 * 250–300 ms at load 11; the hour chart reads only minutes younger than an hour).
 */
export const COARSE_STEP_MINUTES = 15;
export const COARSEN_AFTER_MS = 2 * 3_600_000;
/** One step of minutes a statement: ~2,100 rows at 200,000 attempts a day, a short transaction. */
const COARSEN_SPAN_MS = COARSE_STEP_MINUTES * 60_000;

/** What a bucket's attempts are reported as: the midpoint of the whole milliseconds it holds. */
export function latencyBucketValueMs(bucket: number): number {
  if (bucket <= 0) return 0;
  const lo = LATENCY_BOUNDS_MS[bucket - 1]!;
  const next = LATENCY_BOUNDS_MS[bucket];
  return next === undefined ? lo : (lo + next - 1) / 2;
}

/**
 * The nearest-rank percentile `p` (0..1) of a histogram (bucket → count): the value of the bucket
 * that holds the ceil(p·n)-th attempt, as PostgreSQL's percentile_disc picks it; null when empty.
 */
export function percentileOfBuckets(histogram: ReadonlyMap<number, number>, p: number): number | null {
  const total = [...histogram.values()].reduce((s, n) => s + n, 0);
  if (total <= 0) return null;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (const bucket of [...histogram.keys()].sort((a, b) => a - b)) {
    seen += histogram.get(bucket)!;
    if (seen >= rank) return latencyBucketValueMs(bucket);
  }
  return null;
}

/**
 * Folds each group's delta rows into one, in short batches as compactRollups does; folds the minutes
 * from `coarsenFrom` (default: two days back) up to COARSEN_AFTER_MS before `now` into
 * COARSE_STEP_MINUTES steps, a step a statement; then deletes the minutes older than
 * DELIVERY_ROLLUP_KEEP_MS before `now`, 1,000 rows a statement. Returns the rows removed.
 */
export async function compactDeliveryRollups(db: Db, now: Date, batchRows?: number | BatchSize, coarsenFrom?: Date): Promise<number> {
  const size = batchSizeOf(batchRows, COMPACTION_BATCH_ROWS);
  let removed = 0;
  for (let afterId = 0n; ;) {
    const asked = size.rows;
    const batch = await size.run(() => compactDeliveryRollupBatch(db, afterId, asked));
    removed += batch.removed;
    if (batch.lastId === null || batch.scanned < asked) break;
    afterId = batch.lastId;
  }
  const stepMs = COARSE_STEP_MINUTES * 60_000;
  const coarsenTo = Math.floor((now.getTime() - COARSEN_AFTER_MS) / stepMs) * stepMs;
  for (let from = Math.floor((coarsenFrom?.getTime() ?? now.getTime() - DELIVERY_ROLLUP_KEEP_MS) / stepMs) * stepMs; from < coarsenTo; from += COARSEN_SPAN_MS) {
    removed += await coarsenDeliveryRollups(db, new Date(from), new Date(Math.min(from + COARSEN_SPAN_MS, coarsenTo)), COARSE_STEP_MINUTES);
  }
  const before = new Date(now.getTime() - DELIVERY_ROLLUP_KEEP_MS);
  for (let n = TRIM_BATCH_ROWS; n === TRIM_BATCH_ROWS;) {
    n = await trimDeliveryRollups(db, before, TRIM_BATCH_ROWS);
    removed += n;
  }
  return removed;
}

/**
 * The service's delivery compaction: its first run coarsens the whole two days kept (the service may
 * have been down), later runs only from a step before where the last one stopped.
 */
export function resumingDeliveryCompaction(db: Db, clock: () => Date = () => new Date()): () => Promise<number> {
  let coarsenedTo: number | null = null;
  const batchRows = new BatchSize({ max: COMPACTION_BATCH_ROWS });
  return async () => {
    const now = clock();
    const removed = await compactDeliveryRollups(db, now, batchRows, coarsenedTo === null ? undefined : new Date(coarsenedTo - COARSEN_SPAN_MS));
    coarsenedTo = now.getTime() - COARSEN_AFTER_MS;
    return removed;
  };
}
