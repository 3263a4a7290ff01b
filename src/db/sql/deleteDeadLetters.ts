import type { Db } from '../createDb.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import { expectedRows, RESULT_SAMPLE, targetCte, type ChangeResult, type WriteTarget } from './writeTarget.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface DeleteParams {
  target: WriteTarget;
  allowed: DeadLetterStatus[];
  actor: string;
  reason: string | null;
}

/**
 * Deletes rows (their state rows and delivery attempts go with them, by trigger) and keeps a DELETED history row holding the
 * whole deleted row, so a deletion can be audited and, by hand, undone.
 */
export async function deleteDeadLetters(db: Db, p: DeleteParams): Promise<ChangeResult> {
  const [row] = await runSql<{ n: bigint; ids: bigint[] }>(db, Prisma.sql`
    with target as (${targetCte(p.target, p.allowed)}),
    -- The version and status live on the state row; locking the joined row (both tables) re-checks
    -- them after a concurrent writer commits, as the UPDATE of one wide row used to.
    locked as (
      select v.id, to_jsonb(v) - 'change_xid' - 'change_id' as whole
        from dead_letters_current v join target t on t.id = v.id
       where v.version = t.version and v.status::text = any(${p.allowed}::text[])
         for update of v),
    deleted as (
      delete from dead_letters d using locked l where d.id = l.id
      returning d.id, l.whole),
    history as (
      insert into dead_letter_actions (dead_letter_id, action, actor, reason, before)
      select id, 'DELETED', ${p.actor}::text, ${p.reason}::text, whole
        from deleted)
    select lazarus_expect_rows(${expectedRows(p.target)}::bigint, (select count(*) from deleted)) as n,
           array(select id from deleted order by id limit ${RESULT_SAMPLE}::int) as ids`);
  return { count: Number(row!.n), ids: row!.ids };
}
