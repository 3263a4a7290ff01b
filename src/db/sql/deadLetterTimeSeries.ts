// Failures (by created_at) per UTC hour or day over [trunc(from), to), with empty buckets as 0.
import { Prisma } from '../../generated/prisma/client.ts';

export type BucketSize = 'HOUR' | 'DAY';

export interface TimeBucketRow {
  start: Date;
  count: number;
}

export function deadLetterTimeSeriesSql(where: Prisma.Sql, bucket: BucketSize, from: Date, to: Date): Prisma.Sql {
  const unit = bucket === 'HOUR' ? 'hour' : 'day';
  // '24 hours', not '1 day': timestamptz + '1 day' follows the session time zone's DST shifts.
  const step = bucket === 'HOUR' ? '1 hour' : '24 hours';
  return Prisma.sql`
    with bounds as (
      select date_trunc(${unit}, ${from}::timestamptz, 'UTC') as lo, ${to}::timestamptz as hi
    ), buckets as (
      select generate_series(b.lo, b.hi - interval '1 microsecond', ${step}::interval) as start from bounds b
    ), counts as (
      select date_trunc(${unit}, d.created_at, 'UTC') as start, count(*)::int as n
        from dead_letters_current d, bounds b
       where (${where}) and d.created_at >= b.lo and d.created_at < b.hi
       group by 1
    )
    select bk.start, coalesce(c.n, 0)::int as count
      from buckets bk left join counts c on c.start = bk.start
     order by bk.start`;
}
