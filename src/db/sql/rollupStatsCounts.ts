// Total and counts by status, event type, queue and error kind from the rollups (whole hours) plus
// the partial hours at the ends of the range: the same rows as deadLetterStatsCountsSql.
import { Prisma } from '../../generated/prisma/client.ts';
import { deadLetterSource } from './deadLetterWhere.ts';
import type { RollupPlan } from './rollupPlan.ts';

/**
 * A ledger's rows (`fromLedger`, over alias `r`) in the plan's whole hours, plus the same outputs
 * (`fromTable(sign)`, a select list over `d` whose counts carry `sign`) of dead_letters' rows in its
 * partial hours, as alias `r`: a partial hour's rows in the range, or its whole hour's ledger rows
 * less its rows outside the range. `table` is the view, or dead_letters alone when `fromTable` and
 * the plan's filter read no state.
 */
function contributionsSql(plan: RollupPlan, fromLedger: Prisma.Sql, fromTable: (sign: Prisma.Sql) => Prisma.Sql, table = deadLetterSource(false)): Prisma.Sql {
  const rows = (sign: Prisma.Sql, where: Prisma.Sql) => Prisma.sql`union all select ${fromTable(sign)} from ${table} d where ${where}`;
  const edges = plan.edges.map((edge) => edge.isRestSmaller
    ? Prisma.sql`union all ${fromLedger} where ${edge.hour} ${rows(Prisma.raw('-1'), edge.rest)}`
    : rows(Prisma.raw('1'), edge.where));
  return Prisma.sql`(${fromLedger} where ${plan.rollupWhere} ${edges.length ? Prisma.join(edges, ' ') : Prisma.empty}) r`;
}

/**
 * dead_letter_rollups as (status, event_type, queue, error_kind, bucket, n events, a attempts).
 * PostgreSQL drops the outputs a query does not use, so the covering indexes still serve it
 * index-only.
 */
export function rollupContributionsSql(plan: RollupPlan): Prisma.Sql {
  return contributionsSql(
    plan,
    Prisma.sql`select r.status, r.event_type, r.queue, r.error_kind, r.bucket, r.count as n, r.attempts as a from dead_letter_rollups r`,
    (sign) => Prisma.sql`d.status, d.event_type, d.queue, d.error_kind, lazarus_rollup_bucket(d.created_at), ${sign}::bigint, ${sign} * d.attempts::bigint`,
  );
}

/**
 * dead_letter_rollups as (bucket, n events): what a count or a time series needs. Unless the filter
 * names statuses, the partial hours read dead_letters alone, without a state lookup per row (at 10M
 * rows, 6,114 rows of a partial hour took 42 ms through the view against 4-12 ms alone).
 */
export function rollupBucketContributionsSql(plan: RollupPlan): Prisma.Sql {
  return contributionsSql(
    plan,
    Prisma.sql`select r.bucket, r.count as n from dead_letter_rollups r`,
    (sign) => Prisma.sql`lazarus_rollup_bucket(d.created_at), ${sign}::bigint`,
    deadLetterSource(!plan.readsState),
  );
}

/**
 * dead_letter_signature_rollups as (signature, n events); `plan` from signatureRollupPlan. Its
 * filter has no status, so the partial hours read dead_letters alone: through the view each row
 * cost a state lookup it did not use.
 */
export function signatureContributionsSql(plan: RollupPlan): Prisma.Sql {
  return contributionsSql(
    plan,
    Prisma.sql`select r.error_signature as signature, r.count as n from dead_letter_signature_rollups r`,
    (sign) => Prisma.sql`d.error_signature, ${sign}::bigint`,
    deadLetterSource(true),
  );
}

export function rollupStatsCountsSql(plan: RollupPlan): Prisma.Sql {
  return Prisma.sql`
    select case when grouping(r.status) = 0 then 'status'
                when grouping(r.event_type) = 0 then 'eventType'
                when grouping(r.queue) = 0 then 'queue'
                when grouping(r.error_kind) = 0 then 'errorKind'
                else 'total' end as dimension,
           coalesce(r.status::text, r.event_type, r.queue, r.error_kind::text) as key,
           coalesce(sum(r.n), 0)::int as count,
           coalesce(sum(r.a), 0)::float8 as attempts
      -- Summed per combination first (about 120 over 7 days at 10M rows), so the grouping sets hash
      -- those, not every rollup row five times (24,653 rows: 17 ms of a 62 ms statement).
      from (select r.status, r.event_type, r.queue, r.error_kind, sum(r.n) as n, sum(r.a) as a
              from ${rollupContributionsSql(plan)}
             group by r.status, r.event_type, r.queue, r.error_kind) r
     group by grouping sets ((r.status), (r.event_type), (r.queue), (r.error_kind), ())
    having coalesce(sum(r.n), 0) <> 0 or grouping(r.status, r.event_type, r.queue, r.error_kind) = 15`;
}
