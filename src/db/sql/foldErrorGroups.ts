// Folds the oldest error group ledger rows into error_groups (lazarus_fold_error_groups in
// migration 20261125130000_error_groups_ledger): one statement, so one short transaction.
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/**
 * The transaction-level advisory lock the fold takes (and skips on when busy); the literal in the
 * migration's lazarus_fold_error_groups. Whoever must keep the fold out for a moment takes it too.
 */
export const ERROR_GROUP_FOLD_LOCK = 4757231860019247n;

export interface ErrorGroupFold {
  /** Ledger rows taken; -1 when another folder held the lock (it does the work). */
  taken: number;
  /** Groups created or changed. */
  changed: number;
}

export async function foldErrorGroups(db: Db, maxRows: number): Promise<ErrorGroupFold> {
  const rows = await runSql<{ taken: number; changed: number }>(db, Prisma.sql`select * from lazarus_fold_error_groups(${maxRows}::int)`);
  return { taken: rows[0]?.taken ?? 0, changed: rows[0]?.changed ?? 0 };
}
