// The most frequent error signatures among the filtered dead letters. They are counted by a scan,
// or from the signature rollups (whole hours, plus the scanned partial hours at the ends of the
// range) when the filter allows. Then, for each signature listed, the first and last occurrence
// are read from dead_letters_error_signature_idx (min and max: one descent each), and the sample is
// the first one, by id among equal times. Asking for `order by created_at, id limit 1` instead let
// the planner walk dead_letters_created_idx looking for the signature: 1.9 s at 1M rows, against 15 ms.
import { Prisma } from '../../generated/prisma/client.ts';
import type { RollupPlan } from './rollupPlan.ts';
import { deadLetterSource } from './deadLetterWhere.ts';
import { signatureContributionsSql } from './rollupStatsCounts.ts';

export interface TopErrorRow {
  signature: string;
  count: number;
  firstSeen: Date;
  lastSeen: Date;
  sampleId: bigint;
}

/** `isEventFilter`: `where` reads only dead_letters' own columns, so no row is joined to its state. */
export function deadLetterTopErrorsSql(where: Prisma.Sql, limit: number, plan: RollupPlan | null, isEventFilter = false): Prisma.Sql {
  const table = deadLetterSource(isEventFilter);
  const counted = plan
    ? signatureContributionsSql(plan)
    : Prisma.sql`(select d.error_signature as signature, count(*) as n from ${table} d where ${where} group by 1) r`;
  return Prisma.sql`
    with top as (
      select r.signature, sum(r.n) as count from ${counted}
       group by r.signature having sum(r.n) > 0
       order by sum(r.n) desc, r.signature
       limit ${limit})
    select t.signature, t.count::int as count, f.created_at as "firstSeen", m.last as "lastSeen", f.id as "sampleId"
      from top t
     cross join lateral (select min(d.created_at) as first, max(d.created_at) as last from ${table} d
                          where d.error_signature = t.signature and (${where})) m
     cross join lateral (select d.id, d.created_at from ${table} d where d.error_signature = t.signature and d.created_at = m.first and (${where})
                          order by d.id limit 1) f
     order by t.count desc, t.signature`;
}
