import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { stamp } from './stamp.ts';
import { runSql } from '../runSql.ts';

export interface HeldLease {
  id: bigint;
  leaseToken: string;
}

/**
 * The fence of every write under a lease: the state row `row` still holds the token that the row
 * `held` of the batch was given. A held token means PROCESSING (the lease CHECK constraint ties the
 * two), so the status is not restated. Restated, it lets the planner walk
 * dead_letter_states_lease_idx, which the statistics of a table at rest put at one row, and join
 * the batch to it in a nested loop: 100 × 100 comparisons for a batch of 100, 2.7 ms of a 4.5 ms
 * completion under a prepared statement's generic plan (bench:retry). Without it, PostgreSQL finds
 * the batch's rows by primary key.
 */
export const holdsLease = (row: string, held: string): Prisma.Sql =>
  Prisma.raw(`${row}.id = ${held}.id and ${row}.lease_token = ${held}.token`);

/** Extends the leases this worker still holds; returns the ids it still owns (the rest were lost). */
export async function renewLeases(db: Db, leases: readonly HeldLease[], leaseSeconds: number): Promise<bigint[]> {
  if (leases.length === 0) return [];
  const rows = await runSql<{ id: bigint }>(db, Prisma.sql`
    update dead_letter_states d
       set lease_expires_at = now() + ${leaseSeconds}::int * interval '1 second', ${stamp('d')}
      from unnest(${leases.map((l) => l.id)}::bigint[], ${leases.map((l) => l.leaseToken)}::uuid[]) as h(id, token)
     where ${holdsLease('d', 'h')}
    returning d.id`);
  return rows.map((r) => r.id);
}
