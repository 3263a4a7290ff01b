import type { Db } from '../createDb.ts';

/**
 * Takes (or renews) the lease on one RUNNING or UNDOING transform nobody else holds, as
 * claimRedrive does for redrives: SKIP LOCKED, and an expired lease is a crashed runner's.
 */
export async function claimTransform(db: Db, p: { owner: string; leaseSeconds: number }): Promise<{ id: bigint } | null> {
  const [row] = await db.$queryRaw<{ id: bigint }[]>`
    with next as (
      select id from transforms
       where status in ('RUNNING', 'UNDOING') and (lease_owner is null or lease_owner = ${p.owner}::text or lease_expires_at < now())
       order by id limit 1
       for update skip locked)
    update transforms t
       set lease_owner = ${p.owner}::text, lease_expires_at = now() + ${p.leaseSeconds}::int * interval '1 second'
      from next where t.id = next.id
    returning t.id`;
  return row ? { id: row.id } : null;
}
