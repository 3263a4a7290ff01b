// Count of the dead letters matching a rollup-eligible filter: rollups plus scanned edge hours.
import { Prisma } from '../../generated/prisma/client.ts';
import type { RollupPlan } from './rollupPlan.ts';
import { rollupBucketContributionsSql } from './rollupStatsCounts.ts';

export function rollupCountSql(plan: RollupPlan): Prisma.Sql {
  return Prisma.sql`select coalesce(sum(r.n), 0)::int as count from ${rollupBucketContributionsSql(plan)}`;
}
