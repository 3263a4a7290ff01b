import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import type { Queryable } from './queryable.ts';
import { reopenStamp } from './stamp.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface TransformBatchParams {
  transformId: bigint;
  ids: bigint[];
  payloadJsons: string[];
  /** Also make changed rows in these statuses PENDING, due now (empty: no requeue). */
  requeueFrom: DeadLetterStatus[];
  actor: string;
  reason: string | null;
}

/**
 * Writes new payloads for rows the caller's transaction holds locked (selectTransformTargets), with
 * one PAYLOAD_TRANSFORMED history row each: `before`/`after` are `{ payload, status }`,
 * the old payload copied as jsonb inside the statement so an undo restores it exactly.
 * Returns the number of rows changed.
 */
export async function writeTransformBatch(db: Queryable, p: TransformBatchParams): Promise<number> {
  const [row] = await runSql<{ n: number }>(db, Prisma.sql`
    with input as (
      select e.id, e.payload from unnest(${p.ids.map(String)}::bigint[], ${p.payloadJsons}::jsonb[]) as e(id, payload)),
    target as (
      select d.id, d.payload as old_payload, d.status as old_status from dead_letters_current d join input i on i.id = d.id),
    requeued as (
      update dead_letter_states s set status = 'PENDING', next_attempt_at = now(), ${reopenStamp('s')}
        from input i
       where s.id = i.id and s.status::text = any(${p.requeueFrom}::text[])
      returning s.id, s.status),
    changed as (
      update dead_letters d
         set payload = i.payload
        from input i join target t on t.id = i.id
       where d.id = i.id
      returning d.id, d.payload, coalesce((select r.status from requeued r where r.id = d.id), t.old_status) as status),
    history as (
      insert into dead_letter_actions (dead_letter_id, action, actor, reason, before, after, transform_id)
      select c.id, 'PAYLOAD_TRANSFORMED', ${p.actor}::text, ${p.reason}::text,
             jsonb_build_object('payload', t.old_payload, 'status', t.old_status),
             jsonb_build_object('payload', c.payload, 'status', c.status),
             ${p.transformId.toString()}::bigint
        from changed c join target t on t.id = c.id)
    select count(*)::int as n from changed`);
  return row!.n;
}
