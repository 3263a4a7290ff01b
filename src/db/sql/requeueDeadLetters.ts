import type { Db } from '../createDb.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import { expectedRows, RESULT_SAMPLE, targetCte, type ChangeResult, type WriteTarget } from './writeTarget.ts';
import { reopenStamp } from './stamp.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface RequeueParams {
  target: WriteTarget;
  allowed: DeadLetterStatus[];
  /** Next attempt time; null means now. */
  at: Date | null;
  resetAttempts: boolean;
  actor: string;
  reason: string | null;
  redriveId: bigint | null;
  /** Deliver to the events' origin instead of their policy's target (false clears an earlier choice). */
  isToSource?: boolean;
}

/**
 * Requeue and its REQUEUED history rows in one statement, compare-and-set on version and status,
 * so a row claimed by a worker (PROCESSING) in the meantime is never touched.
 */
export async function requeueDeadLetters(db: Db, p: RequeueParams): Promise<ChangeResult> {
  const [row] = await runSql<{ n: bigint; ids: bigint[] }>(db, Prisma.sql`
    with target as (${targetCte(p.target, p.allowed)}),
    changed as (
      update dead_letter_states d
         set status = 'PENDING',
             next_attempt_at = coalesce(${p.at}::timestamptz, now()),
             attempts = case when ${p.resetAttempts}::boolean then 0 else d.attempts end,
             deliver_to_source = case when ${p.isToSource ?? false}::boolean then true end,
             ${reopenStamp('d')}
        from target t
       where d.id = t.id and d.version = t.version and d.status::text = any(${p.allowed}::text[])
      returning d.id, d.status, d.attempts, d.next_attempt_at,
                t.status as old_status, t.attempts as old_attempts, t.next_attempt_at as old_next_attempt_at),
    history as (
      insert into dead_letter_actions (dead_letter_id, action, actor, reason, before, after, redrive_id)
      select id, 'REQUEUED', ${p.actor}::text, ${p.reason}::text,
             jsonb_build_object('status', old_status, 'attempts', old_attempts, 'nextAttemptAt', old_next_attempt_at),
             jsonb_build_object('status', status, 'attempts', attempts, 'nextAttemptAt', next_attempt_at),
             ${p.redriveId?.toString() ?? null}::bigint
        from changed)
    select lazarus_expect_rows(${expectedRows(p.target)}::bigint, (select count(*) from changed)) as n,
           array(select id from changed order by id limit ${RESULT_SAMPLE}::int) as ids`);
  return { count: Number(row!.n), ids: row!.ids };
}
