import type { Db } from '../createDb.ts';
import type { ErrorGroupStatus } from '../../generated/prisma/enums.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface SetErrorGroupStatusParams {
  id: bigint;
  to: ErrorGroupStatus;
  /** The statuses the move is legal from; any other leaves the group as it is. */
  allowed: ErrorGroupStatus[];
  actor: string;
  reason: string | null;
  /** Replaces the group's note when not null. */
  note: string | null;
}

/**
 * Moves the group and writes its history row in one statement, only if its status is still one
 * of `allowed` when the row is locked. Returns the status it moved from, or null when nothing
 * moved (no such group, or not in an allowed status: the caller reads which).
 */
export async function setErrorGroupStatus(db: Db, p: SetErrorGroupStatusParams): Promise<ErrorGroupStatus | null> {
  const rows = await runSql<{ from_status: ErrorGroupStatus }>(db, Prisma.sql`
    with old as (
      select id, status from error_groups where id = ${p.id}::bigint for update),
    changed as (
      update error_groups g
         set status = ${p.to}::"ErrorGroupStatus", note = coalesce(${p.note}::text, g.note), updated_at = now()
        from old
       where g.id = old.id and old.status::text = any(${p.allowed}::text[])
      returning g.id, old.status as from_status),
    history as (
      insert into error_group_actions (group_id, from_status, to_status, actor, reason, note)
      select id, from_status, ${p.to}::"ErrorGroupStatus", ${p.actor}::text, ${p.reason}::text, ${p.note}::text from changed)
    select from_status::text as from_status from changed`);
  return rows[0]?.from_status ?? null;
}
