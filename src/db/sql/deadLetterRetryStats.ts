// Oldest PENDING event, and how retrying ends: SUCCEEDED against EXHAUSTED, with the mean attempts
// of the SUCCEEDED ones. From a scan of the matching rows, or from the rollups when the filter
// allows (see src/domain/statsRollups.ts); both give the same figures.
import { Prisma } from '../../generated/prisma/client.ts';
import type { RollupPlan } from '../../domain/statsRollups.ts';

export interface RetryStatsRow {
  oldestPendingCreatedAt: Date | null;
  oldestPendingAgeSeconds: number | null;
  succeeded: number;
  exhausted: number;
  meanAttemptsToSuccess: number | null;
}

// The same arithmetic for both: attempts summed, then one float division.
const FIGURES = Prisma.sql`
    oldest as "oldestPendingCreatedAt",
    extract(epoch from now() - oldest)::float8 as "oldestPendingAgeSeconds",
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
              from dead_letters d
             where ${where}) s`;
}

/**
 * The same figures from the rollups: outcome counts and attempts summed over the whole hours plus
 * the scanned partial hours at the ends of the range. The oldest PENDING event is the earliest of
 * those partial hours' own and the first whole hour whose rollups hold a PENDING event, which is
 * then read from the table: at most an hour of rows, through the created_at index.
 */
export function rollupRetryStatsSql(plan: RollupPlan, where: Prisma.Sql): Prisma.Sql {
  const edgeOutcomes = plan.edges.map(
    (edge) => Prisma.sql`union all select d.status, 1::bigint, d.attempts::bigint from dead_letters d where (${edge}) and d.status in ('SUCCEEDED', 'EXHAUSTED')`,
  );
  const edgeOldest = plan.edges.map((edge) => Prisma.sql`(select min(d.created_at) from dead_letters d where d.status = 'PENDING' and (${edge}))`);
  const firstPendingHour = Prisma.sql`(
      select r.bucket from dead_letter_rollups r
       where (${plan.rollupWhere}) and r.status = 'PENDING'
       group by r.bucket having sum(r.count) > 0
       order by r.bucket limit 1)`;
  // The hour as a scalar subquery, not a join, so min() walks dead_letters_created_idx from its
  // start and stops at the first PENDING row (joined, the planner ANDed a bitmap of every PENDING
  // row: 25 ms at 1M rows).
  const hourOldest = Prisma.sql`(
      select min(d.created_at) from dead_letters d
       where d.status = 'PENDING' and (${where})
         and d.created_at >= ${firstPendingHour} and d.created_at < ${firstPendingHour} + interval '1 hour')`;
  return Prisma.sql`
    select ${FIGURES}
      from (select least(${Prisma.join([hourOldest, ...edgeOldest], ', ')}) as oldest,
                   coalesce(sum(x.n) filter (where x.status = 'SUCCEEDED'), 0) as succeeded,
                   coalesce(sum(x.n) filter (where x.status = 'EXHAUSTED'), 0) as exhausted,
                   sum(x.a) filter (where x.status = 'SUCCEEDED') as attempts
              from (select r.status, r.count as n, r.attempts as a from dead_letter_rollups r
                     where (${plan.rollupWhere}) and r.status in ('SUCCEEDED', 'EXHAUSTED')
                    ${edgeOutcomes.length ? Prisma.join(edgeOutcomes, ' ') : Prisma.empty}) x) s`;
}
