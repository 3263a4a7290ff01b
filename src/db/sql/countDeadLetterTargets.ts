import type { Db } from '../createDb.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import { runSql } from '../runSql.ts';

/** Dry run of a change by filter: how many rows it would touch now, and the first few ids. */
export async function countDeadLetterTargets(
  db: Db,
  p: { where: Prisma.Sql; allowed: DeadLetterStatus[]; sample: number },
): Promise<{ count: number; ids: bigint[] }> {
  const [row] = await runSql<{ count: number; ids: bigint[] }>(db, Prisma.sql`
    select (select count(*)::int from dead_letters_current d where (${p.where}) and d.status::text = any(${p.allowed}::text[])) as count,
           array(select d.id from dead_letters_current d where (${p.where}) and d.status::text = any(${p.allowed}::text[])
                  order by d.id limit ${p.sample}::int) as ids`);
  return { count: row!.count, ids: row!.ids };
}
