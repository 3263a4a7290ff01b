import type { Db } from '../createDb.ts';

export interface HeldLease {
  id: bigint;
  leaseToken: string;
}

/** Extends the leases this worker still holds; returns the ids it still owns (the rest were lost). */
export async function renewLeases(db: Db, leases: readonly HeldLease[], leaseSeconds: number): Promise<bigint[]> {
  if (leases.length === 0) return [];
  const rows = await db.$queryRaw<{ id: bigint }[]>`
    update dead_letter_states d
       set lease_expires_at = now() + ${leaseSeconds}::int * interval '1 second'
      from unnest(${leases.map((l) => l.id)}::bigint[], ${leases.map((l) => l.leaseToken)}::uuid[]) as h(id, token)
     where d.id = h.id and d.lease_token = h.token and d.status = 'PROCESSING'
    returning d.id`;
  return rows.map((r) => r.id);
}
