import type { Queryable } from './queryable.ts';

export interface RestoreResult {
  /** Events whose payload was put back. */
  restored: number;
  /** Events left alone because their payload no longer equals what the transform wrote. */
  edited: number;
  editedIds: bigint[];
  /** Events the transform changed that no longer exist. */
  missing: number;
  missingIds: bigint[];
}

/**
 * Undoes a transform's payload changes in one statement: every event whose payload still equals
 * the transform's `after.payload` (jsonb equality) gets `before.payload` back, copied as jsonb, with
 * a TRANSFORM_UNDONE history row. Events edited since are counted, not touched. Under READ COMMITTED
 * a concurrent edit of a row is re-checked after it commits, so an edit is never overwritten.
 */
export async function restoreTransformedPayloads(
  db: Queryable,
  p: { transformId: bigint; actor: string; reason: string | null; sample: number },
): Promise<RestoreResult> {
  const [row] = await db.$queryRaw<{ restored: number; edited: number; edited_ids: bigint[]; missing: number; missing_ids: bigint[] }[]>`
    with items as (
      select a.dead_letter_id as id, a.before -> 'payload' as before_payload, a.after -> 'payload' as after_payload
        from dead_letter_actions a
       where a.transform_id = ${p.transformId.toString()}::bigint and a.action = 'PAYLOAD_TRANSFORMED'),
    restored as (
      update dead_letters d set payload = i.before_payload
        from items i
       where d.id = i.id and d.payload = i.after_payload
      returning d.id, (select s.status from dead_letter_states s where s.id = d.id) as status, i.before_payload, i.after_payload),
    history as (
      insert into dead_letter_actions (dead_letter_id, action, actor, reason, before, after, transform_id)
      select r.id, 'TRANSFORM_UNDONE', ${p.actor}::text, ${p.reason}::text,
             jsonb_build_object('payload', r.after_payload, 'status', r.status),
             jsonb_build_object('payload', r.before_payload, 'status', r.status),
             ${p.transformId.toString()}::bigint
        from restored r),
    kept as (
      select i.id, exists (select 1 from dead_letters d where d.id = i.id) as present
        from items i where i.id not in (select id from restored))
    select (select count(*)::int from restored) as restored,
           (select count(*)::int from kept where present) as edited,
           array(select id from kept where present order by id limit ${p.sample}::int) as edited_ids,
           (select count(*)::int from kept where not present) as missing,
           array(select id from kept where not present order by id limit ${p.sample}::int) as missing_ids`;
  return { restored: row!.restored, edited: row!.edited, editedIds: row!.edited_ids, missing: row!.missing, missingIds: row!.missing_ids };
}
