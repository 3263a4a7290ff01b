// Total and counts by status, event type, queue and error kind from the rollups (whole hours) plus
// the scanned partial hours at the ends of the range: the same rows as deadLetterStatsCountsSql.
import { Prisma } from '../../generated/prisma/client.ts';
import type { RollupPlan } from './rollupPlan.ts';

/**
 * A ledger's rows (`fromLedger`, over alias `r`) in the plan's whole hours, plus the same outputs
 * (`fromTable`, a select list over `d`) of dead_letters' rows in its partial hours, as alias `r`.
 */
function contributionsSql(plan: RollupPlan, fromLedger: Prisma.Sql, fromTable: Prisma.Sql): Prisma.Sql {
  const edges = plan.edges.map((where) => Prisma.sql`union all select ${fromTable} from lazarus_dead_letters d where ${where}`);
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
    Prisma.sql`d.status, d.event_type, d.queue, d.error_kind, lazarus_rollup_bucket(d.created_at), 1::bigint, d.attempts::bigint`,
  );
}

/** dead_letter_signature_rollups as (signature, n events); `plan` from signatureRollupPlan. */
export function signatureContributionsSql(plan: RollupPlan): Prisma.Sql {
  return contributionsSql(
    plan,
    Prisma.sql`select r.error_signature as signature, r.count as n from dead_letter_signature_rollups r`,
    Prisma.sql`d.error_signature, 1::bigint`,
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
           coalesce(sum(r.n), 0)::int as count
      from ${rollupContributionsSql(plan)}
     group by grouping sets ((r.status), (r.event_type), (r.queue), (r.error_kind), ())
    having coalesce(sum(r.n), 0) <> 0 or grouping(r.status, r.event_type, r.queue, r.error_kind) = 15`;
}
