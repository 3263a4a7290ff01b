import type { Db } from '../createDb.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import { reopenStamp } from './stamp.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface RedriveBatchResult {
  /** False when the redrive was not RUNNING under this owner's lease: nothing was done. */
  held: boolean;
  scanned: number;
  requeued: number;
  /** True when the batch found nothing left and marked the redrive COMPLETED. */
  completed: boolean;
}

/**
 * One redrive batch as one statement: take the next `limit` (at most `batch_size`) items after `last_id`, requeue
 * those still eligible (compare-and-set on version and status; PROCESSING and rows changed under
 * us are skipped; deleted ones too), write their history
 * with the redrive id, and advance `last_id` and the counters. Every part is conditioned on the
 * redrive still being RUNNING under our lease, so pause/cancel or a lost lease stops it cleanly,
 * and a batch is recorded exactly when it happened. The batch that finds nothing left records COMPLETED.
 */
export async function requeueRedriveBatch(
  db: Db,
  p: { redriveId: bigint; owner: string; leaseSeconds: number; limit: number; allowed: (force: boolean) => DeadLetterStatus[] },
): Promise<RedriveBatchResult> {
  const normal = p.allowed(false);
  const forced = p.allowed(true);
  const [row] = await runSql<{ held: boolean; scanned: number; requeued: number; completed: boolean }>(db, Prisma.sql`
    with r as (
      select id, last_id, batch_size, reset_attempts, force, reason, created_by, destination from redrives
       where id = ${p.redriveId.toString()}::bigint and status = 'RUNNING' and lease_owner = ${p.owner}::text
       for update),
    batch as (
      select i.dead_letter_id as id, d.version, d.status, d.attempts, d.next_attempt_at
        from redrive_items i
        join r on i.redrive_id = r.id
        left join dead_letter_states d on d.id = i.dead_letter_id
       where i.dead_letter_id > r.last_id
       order by i.dead_letter_id limit least(${p.limit}::int, (select batch_size from r))),
    changed as (
      update dead_letter_states d
         set status = 'PENDING', next_attempt_at = now(),
             attempts = case when r.reset_attempts then 0 else d.attempts end,
             deliver_to_source = case when r.destination = 'SOURCE' then true end,
             ${reopenStamp('d')}
        from batch b, r
       where d.id = b.id and d.version = b.version
         and d.status::text = any(case when r.force then ${forced}::text[] else ${normal}::text[] end)
      returning d.id, d.attempts, d.next_attempt_at, r.created_by, r.reason, r.id as redrive_id,
                b.status as old_status, b.attempts as old_attempts, b.next_attempt_at as old_next_attempt_at),
    history as (
      insert into dead_letter_actions (dead_letter_id, action, actor, reason, before, after, redrive_id)
      select id, 'REQUEUED', created_by, reason,
             jsonb_build_object('status', old_status, 'attempts', old_attempts, 'nextAttemptAt', old_next_attempt_at),
             jsonb_build_object('status', 'PENDING', 'attempts', attempts, 'nextAttemptAt', next_attempt_at),
             redrive_id
        from changed),
    progress as (
      update redrives x
         set last_id = coalesce((select max(id) from batch), x.last_id),
             processed = x.processed + (select count(*) from batch),
             requeued = x.requeued + (select count(*) from changed),
             skipped = x.skipped + (select count(*) from batch) - (select count(*) from changed),
             status = case when (select count(*) from batch) = 0 then 'COMPLETED'::"RedriveStatus" else x.status end,
             finished_at = case when (select count(*) from batch) = 0 then now() else null end,
             lease_expires_at = now() + ${p.leaseSeconds}::int * interval '1 second',
             updated_at = now()
        from r where x.id = r.id
      returning x.id, x.status, x.processed, x.requeued, x.skipped),
    completion as (
      insert into redrive_actions (redrive_id, action, actor, before, after)
      select id, 'COMPLETED', ${p.owner}::text, jsonb_build_object('status', 'RUNNING'),
             jsonb_build_object('status', status, 'processed', processed, 'requeued', requeued, 'skipped', skipped)
        from progress where status = 'COMPLETED')
    select exists (select 1 from progress) as held,
           (select count(*)::int from batch) as scanned,
           (select count(*)::int from changed) as requeued,
           coalesce((select status = 'COMPLETED' from progress), false) as completed`);
  return row!;
}
