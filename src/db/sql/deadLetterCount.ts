// Counts of the dead letters matching a filter (only run when a count is selected).
import { Prisma } from '../../generated/prisma/client.ts';

/** Exact: reads every matching row (or its index entry). */
export function deadLetterCountSql(where: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`select count(*)::int as count from lazarus_dead_letters d where ${where}`;
}

/** Up to `limit + 1`: stops after that many matches, so a count above `limit` costs no more. */
export function deadLetterCountUpToSql(where: Prisma.Sql, limit: number): Prisma.Sql {
  return Prisma.sql`select count(*)::int as count from (select 1 from lazarus_dead_letters d where ${where} limit ${limit + 1}) m`;
}
