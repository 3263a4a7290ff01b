// Keeping the stats rollups small: compaction folds each group's delta rows into one. Which
// filters the rollups answer, and how, is db/sql/rollupPlan.ts.
import type { Db } from '../db/createDb.ts';
import { compactRollupBatch, type CompactionBatch, type RollupLedger } from '../db/sql/compactRollups.ts';

/** Ledger rows per compaction batch: each batch is one statement of a few milliseconds. */
export const COMPACTION_BATCH_ROWS = 200;

/**
 * Folds each rollup group's delta rows into one row, in batches of `batchRows` ledger rows, each
 * its own short transaction (a whole-ledger statement held the live feed's horizon for ~190 ms);
 * returns how many rows it removed. Safe to run at any time, from any number of processes,
 * alongside writers.
 */
export async function compactRollups(
  db: Db,
  options: { batchRows?: number; onBatch?: (ledger: RollupLedger, batch: CompactionBatch) => void } = {},
): Promise<number> {
  const batchRows = options.batchRows ?? COMPACTION_BATCH_ROWS;
  let removed = 0;
  for (const ledger of ['rollups', 'signatureRollups'] as const) {
    for (let afterId = 0n; ;) {
      const batch = await compactRollupBatch(db, ledger, afterId, batchRows);
      options.onBatch?.(ledger, batch);
      removed += batch.removed;
      // Short means caught up; new deltas appended meanwhile wait for the next run.
      if (batch.lastId === null || batch.scanned < batchRows) break;
      afterId = batch.lastId;
    }
  }
  return removed;
}

