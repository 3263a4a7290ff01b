import type { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';

/** A Db or the client of an interactive transaction: statements that may run inside one take this. */
export type Queryable = Db | Prisma.TransactionClient;
