// Dead letters by id, as plugin-prisma selects them, and by dedupe key.
import type { Db } from '../createDb.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import type { PrismaFieldQuery } from './prismaQuery.ts';

export type DeadLetterQuery = PrismaFieldQuery<Prisma.DeadLetterInclude, Prisma.DeadLetterSelect>;

export function findDeadLetter(db: Db, id: bigint, query: DeadLetterQuery = {}) {
  return db.deadLetter.findUnique({ ...query, where: { id } });
}

/** For a row just written: its absence (deleted meanwhile) is an unexpected error. */
export function findDeadLetterOrThrow(db: Db, id: bigint, query: DeadLetterQuery = {}) {
  return db.deadLetter.findUniqueOrThrow({ ...query, where: { id } });
}

/** The stored ones of these ids, ascending (deleted ones are absent). */
export function findDeadLettersByIds(db: Db, ids: bigint[], query: DeadLetterQuery = {}) {
  return db.deadLetter.findMany({ ...query, where: { id: { in: ids } }, orderBy: { id: 'asc' } });
}

/** The stored ones of these dedupe keys, in no particular order. */
export function findDeadLetterIdsByDedupeKey(db: Db, keys: string[]) {
  return db.deadLetter.findMany({ where: { dedupeKey: { in: keys } }, select: { id: true, dedupeKey: true } });
}
