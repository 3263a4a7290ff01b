// Folds the rollup ledger's delta rows per group (see lazarus_compact_rollups in the migration).
import { Prisma } from '../../generated/prisma/client.ts';

export function compactRollupsSql(): Prisma.Sql {
  return Prisma.sql`select lazarus_compact_rollups() as removed`;
}
