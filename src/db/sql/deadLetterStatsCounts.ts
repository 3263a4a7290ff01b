// Total and counts by status, event type, queue and error kind in one scan (GROUPING SETS), each
// with its events' attempts summed (the retry figures' mean attempts to success).
import { Prisma } from '../../generated/prisma/client.ts';

export interface StatsCountRow {
  dimension: 'total' | 'status' | 'eventType' | 'queue' | 'errorKind';
  key: string | null;
  count: number;
  /** The attempts of the counted events, summed (a float8: exact to 2^53). */
  attempts: number;
}

export function deadLetterStatsCountsSql(where: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`
    select case when grouping(d.status) = 0 then 'status'
                when grouping(d.event_type) = 0 then 'eventType'
                when grouping(d.queue) = 0 then 'queue'
                when grouping(d.error_kind) = 0 then 'errorKind'
                else 'total' end as dimension,
           coalesce(d.status::text, d.event_type, d.queue, d.error_kind::text) as key,
           count(*)::int as count,
           coalesce(sum(d.attempts), 0)::float8 as attempts
      from dead_letters_current d
     where ${where}
     group by grouping sets ((d.status), (d.event_type), (d.queue), (d.error_kind), ())`;
}
