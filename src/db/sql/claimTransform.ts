import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/** Why a PREPARING transform whose request lost its lease is FAILED. */
export const ABANDONED_TRANSFORM_ERROR = 'the request recording its events ended before it finished; nothing was changed';

/**
 * Takes (or renews) the lease on one RUNNING or UNDOING transform nobody else holds, as
 * claimRedrive does for redrives: SKIP LOCKED, and an expired lease is a crashed runner's. In the
 * same statement, a PREPARING transform whose request's lease lapsed (the process died while
 * recording its targets) becomes FAILED: it changed nothing and never will.
 */
export async function claimTransform(db: Db, p: { owner: string; leaseSeconds: number }): Promise<{ id: bigint } | null> {
  const [row] = await runSql<{ id: bigint }>(db, Prisma.sql`
    with abandoned as (
      update transforms
         set status = 'FAILED', error = ${ABANDONED_TRANSFORM_ERROR}::text, lease_owner = null, lease_expires_at = null, updated_at = now()
       where status = 'PREPARING' and lease_expires_at < now()),
    next as (
      select id from transforms
       where status in ('RUNNING', 'UNDOING') and (lease_owner is null or lease_owner = ${p.owner}::text or lease_expires_at < now())
       order by id limit 1
       for update skip locked)
    update transforms t
       set lease_owner = ${p.owner}::text, lease_expires_at = now() + ${p.leaseSeconds}::int * interval '1 second'
      from next where t.id = next.id
    returning t.id`);
  return row ? { id: row.id } : null;
}
