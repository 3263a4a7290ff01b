import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';

export interface StatusCount {
  status: string;
  count: number;
}

/** Dead letters per status among rows matching `where` (a boolean over `dead_letters_current d`). */
export async function countDeadLettersByStatus(db: Db, where: Prisma.Sql): Promise<StatusCount[]> {
  return runSql<StatusCount>(db, Prisma.sql`
    select d.status::text as status, count(*)::int as count
      from dead_letters_current d
     where ${where}
     group by d.status
     order by d.status`);
}

/** The same counts from rollup contributions (rollupContributionsSql: whole hours plus scanned partial hours). */
export async function countRolledUpByStatus(db: Db, contributions: Prisma.Sql): Promise<StatusCount[]> {
  return runSql<StatusCount>(db, Prisma.sql`
    select r.status::text as status, sum(r.n)::int as count
      from ${contributions}
     group by r.status
    having sum(r.n) > 0
     order by r.status`);
}
