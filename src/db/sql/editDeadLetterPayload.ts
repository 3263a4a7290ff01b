import type { Db } from '../createDb.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';

export interface EditPayloadParams {
  id: bigint;
  version: number;
  allowed: DeadLetterStatus[];
  payloadJson: string;
  /** Edit-and-retry: also make the row PENDING, due now. */
  requeue: boolean;
  actor: string;
  reason: string | null;
}

/**
 * Replaces the payload if the row is still at `version`, recording the previous payload in the
 * history row's `before` (so the edit can be undone). Returns false when the compare-and-set lost.
 */
export async function editDeadLetterPayload(db: Db, p: EditPayloadParams): Promise<boolean> {
  const [row] = await db.$queryRaw<{ n: bigint }[]>`
    with target as (
      select d.id, d.version, d.status, d.payload from dead_letters d where d.id = ${p.id.toString()}::bigint),
    changed as (
      update dead_letters d
         set payload = ${p.payloadJson}::jsonb,
             status = case when ${p.requeue}::boolean then 'PENDING' else d.status end,
             next_attempt_at = case when ${p.requeue}::boolean then now() else d.next_attempt_at end
        from target t
       where d.id = t.id and d.version = ${p.version}::int and d.status::text = any(${p.allowed}::text[])
      returning d.id, d.payload, d.status, t.payload as old_payload, t.status as old_status),
    history as (
      insert into dead_letter_actions (dead_letter_id, action, actor, reason, before, after)
      select id, 'PAYLOAD_EDITED', ${p.actor}::text, ${p.reason}::text,
             jsonb_build_object('payload', old_payload, 'status', old_status),
             jsonb_build_object('payload', payload, 'status', status)
        from changed)
    select count(*) as n from changed`;
  return row!.n === 1n;
}
