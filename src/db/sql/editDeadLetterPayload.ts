import type { Db } from '../createDb.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import { reopenStamp } from './stamp.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

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
  const [row] = await runSql<{ n: bigint }>(db, Prisma.sql`
    with target as (
      -- Locks the event and its state row: the compare-and-set on version and status holds until commit.
      select v.id, v.version, v.status, v.payload from dead_letters_current v
       where v.id = ${p.id.toString()}::bigint and v.version = ${p.version}::int and v.status::text = any(${p.allowed}::text[])
         for update of v),
    requeued as (
      update dead_letter_states s set status = 'PENDING', next_attempt_at = now(), deliver_to_source = null, ${reopenStamp('s')}
        from target t
       where s.id = t.id and ${p.requeue}::boolean
      returning s.id, s.status),
    -- The payload lives on dead_letters; its update trigger gives the state row a new version and
    -- cursor, so the edit reaches the live feed like any other change.
    changed as (
      update dead_letters d set payload = ${p.payloadJson}::jsonb
        from target t
       where d.id = t.id
      returning d.id, d.payload, coalesce((select r.status from requeued r where r.id = d.id), t.status) as status,
                t.payload as old_payload, t.status as old_status),
    history as (
      insert into dead_letter_actions (dead_letter_id, action, actor, reason, before, after)
      select id, 'PAYLOAD_EDITED', ${p.actor}::text, ${p.reason}::text,
             jsonb_build_object('payload', old_payload, 'status', old_status),
             jsonb_build_object('payload', payload, 'status', status)
        from changed)
    select count(*) as n from changed`);
  return row!.n === 1n;
}
