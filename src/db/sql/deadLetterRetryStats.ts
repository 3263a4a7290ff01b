// Oldest PENDING event, and how retrying ends: SUCCEEDED against EXHAUSTED, with the mean attempts
// of the SUCCEEDED ones. From a scan of the matching rows, or from the rollups when the filter
// allows (see src/domain/statsRollups.ts and reads/stats.ts); both give the same figures.
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

// Attempts summed, then one float division, as reads/stats.ts does with the rollups' sums.
const FIGURES = Prisma.sql`${OLDEST_PENDING},
    succeeded::int as succeeded,
    exhausted::int as exhausted,
    attempts::float8 / nullif(succeeded, 0)::float8 as "meanAttemptsToSuccess"`;

export function deadLetterRetryStatsSql(where: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`
    select ${FIGURES}
      from (select min(d.created_at) filter (where d.status = 'PENDING') as oldest,
                   count(*) filter (where d.status = 'SUCCEEDED') as succeeded,
                   count(*) filter (where d.status = 'EXHAUSTED') as exhausted,
                   sum(d.attempts) filter (where d.status = 'SUCCEEDED') as attempts
              from lazarus_dead_letters d
             where ${where}) s`;
}

/**
 * The oldest PENDING event from the rollups: the earliest of the plan's partial hours' own and the
 * first whole hour whose rollups hold a PENDING event, which is then read from the table: at most an
 * hour of rows, through the created_at index. The outcome counts and attempts come from the stats
 * counts over the same plan (rollupStatsCountsSql), so the partial hours are read once.
 */
export function rollupOldestPendingSql(plan: RollupPlan, where: Prisma.Sql): Prisma.Sql {
  // The oldest as `order by created_at limit 1`, not min(): PostgreSQL turns min() into that walk
  // only over one table, and the view is a join. As min() each read every row of its hour and its
  // state row (13,889 rows, 400 ms at 10M rows on a loaded machine: docs/benchmarks.md, Session 15).
  const oldestPending = (where: Prisma.Sql) => Prisma.sql`(
      select d.created_at from lazarus_dead_letters d where d.status = 'PENDING' and ${where} order by d.created_at limit 1)`;
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
