import type { Db } from '../createDb.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import { expectedRows, RESULT_SAMPLE, targetCte, type ChangeResult, type WriteTarget } from './writeTarget.ts';
import { stamp } from './stamp.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface CloseParams {
  target: WriteTarget;
  allowed: DeadLetterStatus[];
  to: 'RESOLVED' | 'DISCARDED';
  actor: string;
  reason: string;
}

/** Resolve or discard, with history, in one compare-and-set statement. */
export async function closeDeadLetters(db: Db, p: CloseParams): Promise<ChangeResult> {
  const [row] = await runSql<{ n: bigint; ids: bigint[] }>(db, Prisma.sql`
    with target as (${targetCte(p.target, p.allowed)}),
    changed as (
      update dead_letter_states d
         set status = ${p.to}::"DeadLetterStatus", resolved_by = ${p.actor}::text, resolution_reason = ${p.reason}::text,
             resolved_at = coalesce(d.resolved_at, now()), ${stamp('d')}
        from target t
       where d.id = t.id and d.version = t.version and d.status::text = any(${p.allowed}::text[])
      returning d.id, d.status, t.status as old_status),
    history as (
      insert into dead_letter_actions (dead_letter_id, action, actor, reason, before, after)
      select id, ${p.to}::"ActionKind", ${p.actor}::text, ${p.reason}::text,
             jsonb_build_object('status', old_status), jsonb_build_object('status', status)
        from changed)
    select lazarus_expect_rows(${expectedRows(p.target)}::bigint, (select count(*) from changed)) as n,
           array(select id from changed order by id limit ${RESULT_SAMPLE}::int) as ids`);
  return { count: Number(row!.n), ids: row!.ids };
}
