import { Prisma } from '../../generated/prisma/client.ts';

/**
 * What became of an event a redrive requeued: its status now, with PENDING and PROCESSING split by
 * whether a delivery was answered since the requeue (FAILING: it failed and is retrying) or not
 * (PENDING: not yet tried, or its first try is in flight). DELETED: the event is gone.
 */
export type RedriveOutcome = 'DELIVERED' | 'FAILING' | 'EXHAUSTED' | 'RESOLVED' | 'DISCARDED' | 'PENDING' | 'DELETED';
export const REDRIVE_OUTCOMES: readonly RedriveOutcome[] = ['DELIVERED', 'FAILING', 'EXHAUSTED', 'RESOLVED', 'DISCARDED', 'PENDING', 'DELETED'];

/**
 * A fragment, not a statement: rows (dead_letter_id, outcome) of the events this redrive requeued
 * (skipped ones have no REQUEUED action of it and are left out), ids above `afterId`, ascending.
 * Walks only the redrive's own items (redrive_items primary key, up to its last_id); each one is
 * probed by key: its REQUEUED action (dead_letter_actions_dead_letter_idx), its state (primary key)
 * and, only while PENDING or PROCESSING, its attempts (delivery_attempts_dead_letter_idx). So the
 * cost is the redrive's size, never the table's.
 */
export function redriveOutcomeRows(redriveId: bigint, afterId = 0n): Prisma.Sql {
  const id = redriveId.toString();
  // LEASE_LOST is a worker's crash, not the target's answer (as in the guard's window). An attempt
  // recorded after the requeue committed has a later now() than the requeue's.
  return Prisma.sql`
    select i.dead_letter_id,
           case when s.id is null then 'DELETED'
                when s.status = 'SUCCEEDED' then 'DELIVERED'
                when s.status in ('EXHAUSTED', 'RESOLVED', 'DISCARDED') then s.status::text
                when exists (select 1 from delivery_attempts a
                              where a.dead_letter_id = i.dead_letter_id and a.finished_at > q.requeued_at
                                and a.outcome <> 'LEASE_LOST') then 'FAILING'
                else 'PENDING' end as outcome
      from redrive_items i
      cross join lateral (select a.created_at as requeued_at from dead_letter_actions a
                           where a.dead_letter_id = i.dead_letter_id and a.redrive_id = i.redrive_id and a.action = 'REQUEUED'
                           order by a.id desc limit 1) q
      left join dead_letter_states s on s.id = i.dead_letter_id
     where i.redrive_id = ${id}::bigint and i.dead_letter_id > ${afterId.toString()}::bigint
       and i.dead_letter_id <= (select last_id from redrives where id = ${id}::bigint)`;
}
