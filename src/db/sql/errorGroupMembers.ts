import { Prisma } from '../../generated/prisma/client.ts';

/**
 * A boolean over `dead_letters d`: the row belongs to error group `groupId`. Each row carries its
 * group's id (set by its own trigger, migration 20261125130000_error_groups_ledger), read through
 * dead_letters_error_group_idx. An unknown group matches nothing.
 */
export function errorGroupMemberSql(groupId: bigint): Prisma.Sql {
  return Prisma.sql`d.error_group_id = ${groupId}::bigint`;
}
