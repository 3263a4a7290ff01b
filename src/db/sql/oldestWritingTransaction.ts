import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/**
 * Seconds since the oldest transaction of this database that holds an xid began (0 when none):
 * the live feed reads only changes below the oldest such transaction (changeHorizon.ts), so this
 * is how far the feed's horizon can be behind.
 */
export async function oldestWritingTransactionAgeSeconds(db: Db): Promise<number> {
  const [row] = await runSql<{ age: number | null }>(db, Prisma.sql`
    select extract(epoch from now() - min(a.xact_start))::float8 as age
      from pg_stat_activity a
     where a.datname = current_database() and a.backend_xid is not null`);
  return Math.max(0, row?.age ?? 0);
}
