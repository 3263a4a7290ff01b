import type { Prisma } from '../../generated/prisma/client.ts';
import type { RollupPlan } from '../../domain/statsRollups.ts';
import type { Db } from '../createDb.ts';
import { rollupContributionsSql } from './rollupStatsCounts.ts';

export interface StatusCount {
  status: string;
  count: number;
}

/** Dead letters per status among rows matching `where` (a boolean over `dead_letters d`). */
export async function countDeadLettersByStatus(db: Db, where: Prisma.Sql): Promise<StatusCount[]> {
  return db.$queryRaw<StatusCount[]>`
    select d.status::text as status, count(*)::int as count
      from dead_letters d
     where ${where}
     group by d.status
     order by d.status`;
}

/** The same counts from the hourly rollups (whole hours) plus the scanned partial hours of `plan`. */
export async function countRolledUpByStatus(db: Db, plan: RollupPlan): Promise<StatusCount[]> {
  return db.$queryRaw<StatusCount[]>`
    select r.status::text as status, sum(r.n)::int as count
      from ${rollupContributionsSql(plan)}
     group by r.status
    having sum(r.n) > 0
     order by r.status`;
}
