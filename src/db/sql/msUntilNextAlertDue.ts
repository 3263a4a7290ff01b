import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/**
 * Milliseconds (by the database's clock, which set them) until the earliest PENDING alert is due or
 * the earliest lease runs out; null when there is neither. Both read partial indexes.
 */
export async function msUntilNextAlertDue(db: Db): Promise<number | null> {
  const [row] = await runSql<{ ms: number | null }>(db, Prisma.sql`
    select extract(epoch from least(
             (select min(next_attempt_at) from alerts where delivery_status = 'PENDING'),
             (select min(lease_expires_at) from alerts where delivery_status = 'DELIVERING')) - now())::float8 * 1000 as ms`);
  return row?.ms ?? null;
}
