import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface RedriveClaim {
  id: bigint;
  /** Milliseconds since the redrive's ramp started, by the database's clock. */
  rampElapsedMs: number;
}

/**
 * Takes (or renews) the lease on one RUNNING redrive nobody else holds. SKIP LOCKED so runners
 * in several processes never wait on each other; an expired lease is a crashed runner's.
 */
export async function claimRedrive(db: Db, p: { owner: string; leaseSeconds: number }): Promise<RedriveClaim | null> {
  const [row] = await runSql<{ id: bigint; ramp_elapsed_ms: number }>(db, Prisma.sql`
    with next as (
      select id from redrives
       where status = 'RUNNING' and (lease_owner is null or lease_owner = ${p.owner}::text or lease_expires_at < now())
       order by id limit 1
       for update skip locked)
    update redrives r
       set lease_owner = ${p.owner}::text, lease_expires_at = now() + ${p.leaseSeconds}::int * interval '1 second'
      from next where r.id = next.id
    returning r.id, (extract(epoch from now() - r.ramp_started_at) * 1000)::float8 as ramp_elapsed_ms`);
  return row ? { id: row.id, rampElapsedMs: row.ramp_elapsed_ms } : null;
}
