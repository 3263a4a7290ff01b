// Exact count of the dead letters matching a filter (only run when totalCount is selected).
import { Prisma } from '../../generated/prisma/client.ts';

export function deadLetterCountSql(where: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`select count(*)::int as count from dead_letters d where ${where}`;
}
