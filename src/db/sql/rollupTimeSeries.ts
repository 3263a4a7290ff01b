// Failures per UTC hour or day over [lo, hi) from the rollups plus scanned edge hours, empty
// buckets as 0: the same rows as deadLetterTimeSeriesSql when the plan's filter is limited to
// [lo, hi) (lo is `from` truncated to its bucket).
import { Prisma } from '../../generated/prisma/client.ts';
import type { RollupPlan } from './rollupPlan.ts';
import type { BucketSize } from './deadLetterTimeSeries.ts';
import { rollupContributionsSql } from './rollupStatsCounts.ts';

export function rollupTimeSeriesSql(plan: RollupPlan, bucket: BucketSize, lo: Date, hi: Date): Prisma.Sql {
  const unit = bucket === 'HOUR' ? 'hour' : 'day';
  const step = bucket === 'HOUR' ? '1 hour' : '24 hours';
  return Prisma.sql`
    with buckets as (
      select generate_series(${lo}::timestamptz, ${hi}::timestamptz - interval '1 microsecond', ${step}::interval) as start
    ), counts as (
      select date_trunc(${unit}, r.bucket, 'UTC') as start, sum(r.n) as n from ${rollupContributionsSql(plan)} group by 1
    )
    select bk.start, coalesce(c.n, 0)::int as count
      from buckets bk left join counts c on c.start = bk.start
     order by bk.start`;
}
