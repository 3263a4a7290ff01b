// How many rows match, counting no further than `cap`. With no ORDER BY the planner answers a
// selective text or payload filter from its GIN index, and a common one stops after `cap` rows.
import { Prisma } from '../../generated/prisma/client.ts';

export function deadLetterMatchProbeSql(where: Prisma.Sql, cap: number): Prisma.Sql {
  return Prisma.sql`select count(*)::int as n from (select 1 from dead_letters d where ${where} limit ${cap}) s`;
}
