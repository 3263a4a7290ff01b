// Keeping the stats rollups small: compaction folds each group's delta rows into one. Which
// filters the rollups answer, and how, is db/sql/rollupPlan.ts.
import type { Db } from '../db/createDb.ts';
import { compactRollupBatch, type CompactionBatch, type RollupLedger } from '../db/sql/compactRollups.ts';
import { BatchSize, batchSizeOf } from './batchSize.ts';

/** Ledger rows per compaction batch at most: each batch is one statement of a few milliseconds. */
export const COMPACTION_BATCH_ROWS = 200;

/**
 * Folds each rollup group's delta rows into one row, in batches of `batchRows` ledger rows, each
 * its own short transaction (a whole-ledger statement held the live feed's horizon for ~190 ms);
 * returns how many rows it removed. Safe to run at any time, from any number of processes,
 * alongside writers.
 */
export async function compactRollups(
  db: Db,
  options: {
    /** Ledger rows per batch: a number is fixed; default a BatchSize of at most COMPACTION_BATCH_ROWS. */
    batchRows?: number | BatchSize;
    onBatch?: (ledger: RollupLedger, batch: CompactionBatch) => void;
    /** Per ledger, the id to start after (a watermark an earlier run reached); default 0, the whole ledger. */
    from?: Partial<Record<RollupLedger, bigint>>;
  } = {},
): Promise<number> {
  const size = batchSizeOf(options.batchRows, COMPACTION_BATCH_ROWS);
  let removed = 0;
  for (const ledger of ['rollups', 'signatureRollups'] as const) {
    for (let afterId = options.from?.[ledger] ?? 0n; ;) {
      const asked = size.rows;
      const batch = await size.run(() => compactRollupBatch(db, ledger, afterId, asked));
      options.onBatch?.(ledger, batch);
      removed += batch.removed;
      // Short means caught up; new deltas appended meanwhile wait for the next run.
      if (batch.lastId === null || batch.scanned < asked) break;
      afterId = batch.lastId;
    }
  }
  return removed;
}

/**
 * Every this many runs, resumingCompactions starts from the start of the ledgers again: for a
 * delta whose id was taken before a run passed it but committed after (ids are taken in one order
 * and committed in another). Until then that group is only slower to read, never wrong.
 */
export const COMPACTION_RESTART_EVERY = 10;

/**
 * One compactRollups run per call, each from the watermarks the last run reached and every
 * COMPACTION_RESTART_EVERY-th (the first included) from the start: the service's job. A run from
 * the start walks every ledger row, and every entry compaction deleted that VACUUM has not yet
 * removed: at 1M events ~540 batches, 10.6 s of database time a minute (bench:live); a run from the
 * watermark reads only the deltas written since.
 */
export function resumingCompactions(db: Db, onBatch?: (ledger: RollupLedger, batch: CompactionBatch) => void): () => Promise<number> {
  let runs = 0;
  const reached: Partial<Record<RollupLedger, bigint>> = {};
  const batchRows = new BatchSize({ max: COMPACTION_BATCH_ROWS });
  return () => compactRollups(db, {
    batchRows,
    ...(runs++ % COMPACTION_RESTART_EVERY !== 0 && { from: { ...reached } }),
    onBatch: (ledger, batch) => {
      if (batch.lastId !== null) reached[ledger] = batch.lastId;
      onBatch?.(ledger, batch);
    },
  });
}

