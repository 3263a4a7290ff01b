// The oldest PENDING event, from a scan of the matching rows or from the rollups when the filter
// allows (see src/domain/statsRollups.ts); both give the same figure. How retrying ends (SUCCEEDED
// against EXHAUSTED, the mean attempts of the SUCCEEDED ones) comes from the stats counts, which sum
// attempts per status (reads/stats.ts).
import { Prisma } from '../../generated/prisma/client.ts';
import type { RollupPlan } from './rollupPlan.ts';

export interface OldestPendingRow {
  oldestPendingCreatedAt: Date | null;
  oldestPendingAgeSeconds: number | null;
}

export interface RetryStatsRow extends OldestPendingRow {
  succeeded: number;
  exhausted: number;
  meanAttemptsToSuccess: number | null;
}

const OLDEST_PENDING = Prisma.sql`
    oldest as "oldestPendingCreatedAt",
    extract(epoch from now() - oldest)::float8 as "oldestPendingAgeSeconds"`;

/** The oldest PENDING event from a scan of the matching rows. */
export function deadLetterOldestPendingSql(where: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`
    select ${OLDEST_PENDING}
      from (select min(d.created_at) as oldest from dead_letters_current d where d.status = 'PENDING' and (${where})) s`;
}

/**
 * The oldest PENDING event from the rollups: the earliest of the plan's partial hours' own and the
 * first whole hour whose rollups hold a PENDING event, which is then read from the table: at most an
 * hour of rows, through the created_at index.
 */
export function rollupOldestPendingSql(plan: RollupPlan, where: Prisma.Sql): Prisma.Sql {
  // The oldest as `order by created_at limit 1`, not min(): PostgreSQL turns min() into that walk
  // only over one table, and the view is a join. As min() each read every row of its hour and its
  // state row (13,889 rows, 400 ms at 10M rows on a loaded machine: docs/benchmarks.md, Session 15).
  const oldestPending = (where: Prisma.Sql) => Prisma.sql`(
      select d.created_at from dead_letters_current d where d.status = 'PENDING' and ${where} order by d.created_at limit 1)`;
  const edgeOldest = plan.edges.map((edge) => oldestPending(Prisma.sql`(${edge.where})`));
  // The hour read once (a materialized CTE), then used as a scalar, not joined, so the walk of
  // dead_letters_created_idx starts at the hour and stops at the first PENDING row (joined, the
  // planner ANDed a bitmap of every PENDING row: 25 ms at 1M rows).
  const hourOldest = oldestPending(Prisma.sql`(${where})
         and d.created_at >= (select bucket from pending_hour) and d.created_at < (select bucket from pending_hour) + interval '1 hour'`);
  return Prisma.sql`
    with pending_hour as materialized (
      select r.bucket from dead_letter_rollups r
       where (${plan.rollupWhere}) and r.status = 'PENDING'
       group by r.bucket having sum(r.count) > 0
       order by r.bucket limit 1)
    select ${OLDEST_PENDING}
      from (select least(${Prisma.join([hourOldest, ...edgeOldest], ', ')}) as oldest) s`;
}
