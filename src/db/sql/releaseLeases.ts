import type { Db } from '../createDb.ts';
import { holdsLease, type HeldLease } from './renewLeases.ts';
import { stamp } from './stamp.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/**
 * Graceful shutdown: hands held events back as PENDING and due now, refunding the attempt the
 * claim charged (no delivery finished, so none is recorded). Returns how many were released.
 */
export async function releaseLeases(db: Db, leases: readonly HeldLease[]): Promise<number> {
  if (leases.length === 0) return 0;
  const rows = await runSql<{ id: bigint }>(db, Prisma.sql`
    update dead_letter_states d
       set status = 'PENDING', attempts = greatest(d.attempts - 1, 0), next_attempt_at = now(),
           lease_owner = null, lease_token = null, lease_expires_at = null, ${stamp('d')}
      from unnest(${leases.map((l) => l.id)}::bigint[], ${leases.map((l) => l.leaseToken)}::uuid[]) as h(id, token)
     where ${holdsLease('d', 'h')}
    returning d.id`);
  return rows.length;
}
