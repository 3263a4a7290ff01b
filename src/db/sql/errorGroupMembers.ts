import { Prisma } from '../../generated/prisma/client.ts';
import type { ErrorKind } from '../../generated/prisma/enums.ts';

/** What identifies a group's members: see errorGroupMemberSql. */
export interface ErrorGroupKey {
  eventType: string;
  errorKind: ErrorKind;
  signature: string;
}

/**
 * A boolean over `dead_letters d`: the row belongs to error group `groupId` (migration
 * 20261125100000_error_groups): same event type and error kind, and its fingerprint, or without
 * one its error signature, is the group's signature. Each subquery is one primary-key probe run
 * once per statement; the signature test is two index conditions (the fingerprint's partial index,
 * dead_letters_error_signature_idx) rather than one on coalesce(), which no index holds.
 * An unknown group matches nothing.
 */
export function errorGroupMemberSql(groupId: bigint): Prisma.Sql {
  const group = (column: string) => Prisma.sql`(select g.${Prisma.raw(column)} from error_groups g where g.id = ${groupId}::bigint)`;
  return Prisma.sql`(d.event_type = ${group('event_type')} and d.error_kind = ${group('error_kind')}
    and (d.fingerprint = ${group('signature')} or (d.fingerprint is null and d.error_signature = ${group('signature')})))`;
}
