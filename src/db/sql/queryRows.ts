import type { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';

/** Runs a statement built by one of db/sql's `…Sql` functions and returns its rows. */
export function queryRows<T>(db: Db, statement: Prisma.Sql): Promise<T[]> {
  return db.$queryRaw<T[]>(statement);
}
