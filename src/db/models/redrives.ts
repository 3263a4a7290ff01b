// Redrives by id and the newest ones, as plugin-prisma selects them.
import type { Db } from '../createDb.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import type { RedriveStatus } from '../../generated/prisma/enums.ts';
import type { PrismaFieldQuery } from './prismaQuery.ts';

export type RedriveQuery = PrismaFieldQuery<Prisma.RedriveInclude, Prisma.RedriveSelect>;

export function findRedrive(db: Db, id: bigint, query: RedriveQuery = {}) {
  return db.redrive.findUnique({ ...query, where: { id } });
}

/** For a redrive just written: its absence is an unexpected error. */
export function findRedriveOrThrow(db: Db, id: bigint, query: RedriveQuery = {}) {
  return db.redrive.findUniqueOrThrow({ ...query, where: { id } });
}

/** The newest `first`, of these statuses when given. */
export function findRedrives(db: Db, query: RedriveQuery, p: { statuses: RedriveStatus[] | null; first: number }) {
  return db.redrive.findMany({ ...query, where: p.statuses ? { status: { in: p.statuses } } : {}, orderBy: { id: 'desc' }, take: p.first });
}
