// Error groups by id, and a group's status history.
import type { Db } from '../createDb.ts';
import type { ErrorGroup, ErrorGroupAction } from '../../generated/prisma/client.ts';

export function findErrorGroup(db: Db, id: bigint): Promise<ErrorGroup | null> {
  return db.errorGroup.findUnique({ where: { id } });
}

/** The groups with these ids that exist, in no particular order. */
export function findErrorGroups(db: Db, ids: bigint[]): Promise<ErrorGroup[]> {
  return db.errorGroup.findMany({ where: { id: { in: ids } } });
}

/** For a group just written: its absence is an unexpected error. */
export function findErrorGroupOrThrow(db: Db, id: bigint): Promise<ErrorGroup> {
  return db.errorGroup.findUniqueOrThrow({ where: { id } });
}

/** Oldest first. */
export function findErrorGroupActions(db: Db, groupId: bigint): Promise<ErrorGroupAction[]> {
  return db.errorGroupAction.findMany({ where: { groupId }, orderBy: { id: 'asc' } });
}

export function findErrorGroupStatus(db: Db, id: bigint): Promise<Pick<ErrorGroup, 'status'> | null> {
  return db.errorGroup.findUnique({ where: { id }, select: { status: true } });
}
