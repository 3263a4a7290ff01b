// Transforms by id and the newest ones, as plugin-prisma selects them, and the lease and failure writes.
import type { Db } from '../createDb.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import type { PrismaFieldQuery } from './prismaQuery.ts';

export type TransformQuery = PrismaFieldQuery<Prisma.TransformInclude, Prisma.TransformSelect>;

export function findTransform(db: Db, id: bigint, query: TransformQuery = {}) {
  return db.transform.findUnique({ ...query, where: { id } });
}

/** For a transform just written: its absence is an unexpected error. */
export function findTransformOrThrow(db: Db, id: bigint, query: TransformQuery = {}) {
  return db.transform.findUniqueOrThrow({ ...query, where: { id } });
}

/** The newest `first`. */
export function findTransforms(db: Db, query: TransformQuery, first: number) {
  return db.transform.findMany({ ...query, orderBy: { id: 'desc' }, take: first });
}

/** Marks transform `id` FAILED with `error` when it is RUNNING or UNDOING, and drops its lease. */
export function markTransformFailed(db: Db, id: bigint, error: string) {
  return db.transform.updateMany({
    where: { id, status: { in: ['RUNNING', 'UNDOING'] } },
    data: { status: 'FAILED', error, leaseOwner: null, leaseExpiresAt: null, updatedAt: new Date() },
  });
}

/** Drops the lease `owner` holds on transform `id`, if it still does. */
export function clearTransformLease(db: Db, id: bigint, owner: string) {
  return db.transform.updateMany({ where: { id, leaseOwner: owner }, data: { leaseOwner: null, leaseExpiresAt: null } });
}
