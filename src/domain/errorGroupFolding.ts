// Error group maintenance: producers' statement triggers append signed deltas to the ledger
// error_group_deltas (no row locks, so no producer waits on another); this folds them into
// error_groups and applies the lifecycle (migration 20261125130000_error_groups_ledger). The
// service runs it on startPeriodic every DEFAULT_FOLD_INTERVAL_MS and at once on each dead_letters
// hint, so a group is behind its members by the fold delay (well under a second).
import type { Db } from '../db/createDb.ts';
import { foldErrorGroups as foldBatch, type ErrorGroupFold } from '../db/sql/foldErrorGroups.ts';
import { BatchSize, batchSizeOf } from './batchSize.ts';

/** Ledger rows per fold at most: each batch is one statement of a few milliseconds. */
export const FOLD_BATCH_ROWS = 500;
/** How often the service folds without a hint. */
export const DEFAULT_FOLD_INTERVAL_MS = 300;

export interface FoldResult {
  /** Ledger rows folded. */
  folded: number;
  /** Groups created or changed (a group changed by two batches counts twice). */
  changed: number;
  /** Another process was folding; its run covers what this one would have done. */
  busy: boolean;
}

/**
 * Folds the ledger in batches of `batchRows` rows (a number is fixed; default a BatchSize of at most
 * FOLD_BATCH_ROWS), each its own short transaction, until a batch comes back short (caught up).
 * Safe from any number of processes at once: one folds, the others return `busy`.
 */
export async function foldErrorGroupLedger(
  db: Db,
  options: { batchRows?: number | BatchSize; signal?: AbortSignal; onBatch?: (batch: ErrorGroupFold) => void } = {},
): Promise<FoldResult> {
  const size = batchSizeOf(options.batchRows, FOLD_BATCH_ROWS);
  const result: FoldResult = { folded: 0, changed: 0, busy: false };
  while (!options.signal?.aborted) {
    const asked = size.rows;
    const batch = await size.run(() => foldBatch(db, asked));
    options.onBatch?.(batch);
    if (batch.taken < 0) {
      result.busy = true;
      break;
    }
    result.folded += batch.taken;
    result.changed += batch.changed;
    if (batch.taken < asked) break;
  }
  return result;
}

/** The service's folding job: foldErrorGroupLedger per call, its batch size kept from one call to the next. */
export function sizedFolds(db: Db, onBatch?: (batch: ErrorGroupFold) => void): (signal?: AbortSignal) => Promise<FoldResult> {
  const batchRows = new BatchSize({ max: FOLD_BATCH_ROWS });
  return (signal) => foldErrorGroupLedger(db, { batchRows, ...(signal && { signal }), ...(onBatch && { onBatch }) });
}
