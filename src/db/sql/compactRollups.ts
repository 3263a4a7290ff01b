// Folds the rollup ledgers' delta rows per group, one short batch at a time (see
// lazarus_compact_rollups_batch in migration 20261124140000_compact_rollups_in_batches).
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { ASYNC_COMMIT } from './asyncCommit.ts';

export type RollupLedger = 'rollups' | 'signatureRollups';

export interface CompactionBatch {
  /** The last ledger id the batch looked at; null when there was nothing after `afterId`. */
  lastId: bigint | null;
  /** Ledger rows looked at; fewer than asked for means the batch reached the end of the ledger. */
  scanned: number;
  removed: number;
}

/**
 * One statement, so one short transaction, committed asynchronously (asyncCommit.ts): the groups of
 * the next `maxRows` ledger rows after `afterId`.
 */
export async function compactRollupBatch(db: Db, ledger: RollupLedger, afterId: bigint, maxRows: number): Promise<CompactionBatch> {
  const batch = ledger === 'rollups'
    ? Prisma.sql`lazarus_compact_rollups_batch(${afterId}::bigint, ${maxRows}::int)`
    : Prisma.sql`lazarus_compact_signature_rollups_batch(${afterId}::bigint, ${maxRows}::int)`;
  const rows = await runSql<{ last_id: bigint | null; scanned: number; removed: bigint }>(db, Prisma.sql`select b.*, ${ASYNC_COMMIT} from ${batch} b`);
  return { lastId: rows[0]?.last_id ?? null, scanned: rows[0]?.scanned ?? 0, removed: Number(rows[0]?.removed ?? 0) };
}
