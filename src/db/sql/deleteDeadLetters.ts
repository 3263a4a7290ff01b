import type { Db } from '../createDb.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import { expectedRows, RESULT_SAMPLE, targetCte, type ChangeResult, type WriteTarget } from './writeTarget.ts';

export interface DeleteParams {
  target: WriteTarget;
  allowed: DeadLetterStatus[];
  actor: string;
  reason: string | null;
}

/**
 * Deletes rows (their delivery attempts cascade) and keeps a DELETED history row holding the
 * whole deleted row, so a deletion can be audited and, by hand, undone.
 */
export async function deleteDeadLetters(db: Db, p: DeleteParams): Promise<ChangeResult> {
  const [row] = await db.$queryRaw<{ n: bigint; ids: bigint[] }[]>`
    with target as (${targetCte(p.target, p.allowed)}),
    deleted as (
      delete from dead_letters d
       using target t
       where d.id = t.id and d.version = t.version and d.status::text = any(${p.allowed}::text[])
      returning d.*),
    history as (
      insert into dead_letter_actions (dead_letter_id, action, actor, reason, before)
      select id, 'DELETED', ${p.actor}::text, ${p.reason}::text,
             to_jsonb(deleted) - 'change_xid' - 'change_id'
        from deleted)
    select lazarus_expect_rows(${expectedRows(p.target)}::bigint, (select count(*) from deleted)) as n,
           array(select id from deleted order by id limit ${RESULT_SAMPLE}::int) as ids`;
  return { count: Number(row!.n), ids: row!.ids };
}
