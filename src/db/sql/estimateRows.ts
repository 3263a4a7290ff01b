// PostgreSQL's own estimate of how many rows a condition matches: EXPLAIN plans the statement and
// runs nothing. For choosing between plans PostgreSQL cannot weigh in one statement.
import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';

/** The rows of `table` (aliased `d`) that PostgreSQL estimates `where` to match. */
export async function estimateRows(db: Db, table: 'dead_letters' | 'dead_letter_states', where: Prisma.Sql): Promise<number> {
  const [row] = await runSql<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>(
    db, Prisma.sql`explain (format json) select from ${Prisma.raw(table)} d where ${where}`);
  return row!['QUERY PLAN'][0].Plan['Plan Rows'];
}
