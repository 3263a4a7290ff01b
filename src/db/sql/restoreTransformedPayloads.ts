import type { Queryable } from './queryable.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface RestoreBatchResult {
  /** False when the transform was not UNDOING under this owner's lease: nothing was done. */
  held: boolean;
  scanned: number;
  restored: number;
  /** True when no history row was left after this batch and the transform was marked UNDONE. */
  completed: boolean;
}

/**
 * One undo batch as one statement: the next `limit` PAYLOAD_TRANSFORMED history rows of the
 * transform after `undo_last_id`; every event whose payload still equals that row's `after.payload`
 * (jsonb equality) gets `before.payload` back, copied as jsonb (payload::text byte-identical), with
 * a TRANSFORM_UNDONE history row. Events edited since are counted and sampled, not touched (under
 * READ COMMITTED a concurrent edit is re-checked after it commits, so it is never overwritten);
 * deleted ones are counted as missing. Every part is conditioned on the transform being UNDOING
 * under this owner's lease, and the progress is written in the same statement, so a batch is
 * recorded exactly when it happened. The batch after which no history row is left marks it UNDONE.
 */
export async function restoreTransformedPayloads(
  db: Queryable,
  p: { transformId: bigint; owner: string; leaseSeconds: number; limit: number; sample: number },
): Promise<RestoreBatchResult> {
  const [row] = await runSql<RestoreBatchResult>(db, Prisma.sql`
    with x as (
      select id, undo_last_id, undone_by, undo_reason from transforms
       where id = ${p.transformId.toString()}::bigint and status = 'UNDOING' and lease_owner = ${p.owner}::text
         for update),
    -- The bound is a scalar subquery and the transform id a value, so both are index conditions on
    -- dead_letter_actions_transform_idx: a join with x instead let the planner walk every action
    -- in dead_letter_id order and filter, so each batch read everything before it.
    items as materialized (
      select a.dead_letter_id as id, a.before -> 'payload' as before_payload, a.after -> 'payload' as after_payload
        from dead_letter_actions a
       where a.transform_id = ${p.transformId.toString()}::bigint and a.action = 'PAYLOAD_TRANSFORMED'
         and a.dead_letter_id > (select undo_last_id from x)
       order by a.dead_letter_id limit ${p.limit}::int),
    restored as (
      update dead_letters d set payload = i.before_payload
        from items i
       where d.id = i.id and d.payload = i.after_payload
      returning d.id, (select s.status from dead_letter_states s where s.id = d.id) as status, i.before_payload, i.after_payload),
    history as (
      insert into dead_letter_actions (dead_letter_id, action, actor, reason, before, after, transform_id)
      select r.id, 'TRANSFORM_UNDONE', x.undone_by, x.undo_reason,
             jsonb_build_object('payload', r.after_payload, 'status', r.status),
             jsonb_build_object('payload', r.before_payload, 'status', r.status),
             x.id
        from restored r, x),
    remaining as (
      select exists (select 1 from dead_letter_actions a
                      where a.transform_id = ${p.transformId.toString()}::bigint and a.action = 'PAYLOAD_TRANSFORMED'
                        and a.dead_letter_id > coalesce((select max(id) from items), (select undo_last_id from x))) as any_left),
    kept as (
      select i.id, exists (select 1 from dead_letters d where d.id = i.id) as present
        from items i where i.id not in (select id from restored)),
    progress as (
      update transforms t
         set undo_last_id = coalesce((select max(id) from items), t.undo_last_id),
             undo_processed = t.undo_processed + (select count(*) from items),
             restored = t.restored + (select count(*) from restored),
             kept_edited = t.kept_edited + (select count(*) from kept where present),
             kept_missing = t.kept_missing + (select count(*) from kept where not present),
             kept_edited_ids = (t.kept_edited_ids || array(select id from kept where present order by id))[1:${p.sample}::int],
             kept_missing_ids = (t.kept_missing_ids || array(select id from kept where not present order by id))[1:${p.sample}::int],
             status = case when r.any_left then t.status else 'UNDONE' end,
             undone_at = case when r.any_left then null else now() end,
             lease_owner = case when r.any_left then t.lease_owner end,
             lease_expires_at = case when r.any_left then now() + ${p.leaseSeconds}::int * interval '1 second' end,
             updated_at = now()
        from x, remaining r where t.id = x.id
      returning t.status)
    select exists (select 1 from progress) as held,
           (select count(*)::int from items) as scanned,
           (select count(*)::int from restored) as restored,
           coalesce((select status = 'UNDONE' from progress), false) as completed`);
  return row!;
}
