import type { Queryable } from './queryable.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface TransformBatchProgress {
  transformId: bigint;
  /** The targets this batch handled (their items are deleted). */
  ids: bigint[];
  changed: number;
  unchanged: number;
  failed: number;
  skippedIds: bigint[];
  /** The transform's failures by reason, this batch's merged in. */
  failuresJson: string;
  leaseSeconds: number;
  /** How many skipped ids the transform keeps. */
  skippedSample: number;
}

/**
 * Ends an apply batch inside its transaction (after lockHeldTransform): deletes the handled items,
 * adds the counts, renews the lease, and marks the transform APPLIED (lease dropped) when no item
 * is left. Returns true when it did.
 */
export async function recordTransformBatch(db: Queryable, p: TransformBatchProgress): Promise<boolean> {
  const last = p.ids.length === 0 ? '0' : p.ids[p.ids.length - 1]!.toString();
  const [row] = await runSql<{ completed: boolean }>(db, Prisma.sql`
    with handled as (
      delete from transform_items
       where transform_id = ${p.transformId.toString()}::bigint and dead_letter_id = any(${p.ids.map(String)}::bigint[])),
    remaining as (
      select exists (select 1 from transform_items
                      where transform_id = ${p.transformId.toString()}::bigint and dead_letter_id > ${last}::bigint) as any_left),
    progress as (
      update transforms t
         set processed = t.processed + ${p.ids.length}::int,
             changed = t.changed + ${p.changed}::int,
             unchanged = t.unchanged + ${p.unchanged}::int,
             failed = t.failed + ${p.failed}::int,
             skipped = t.skipped + ${p.skippedIds.length}::int,
             skipped_ids = (t.skipped_ids || ${p.skippedIds.map(String)}::bigint[])[1:${p.skippedSample}::int],
             failures = ${p.failuresJson}::jsonb,
             status = case when r.any_left then t.status else 'APPLIED' end,
             applied_at = case when r.any_left then null else now() end,
             lease_owner = case when r.any_left then t.lease_owner end,
             lease_expires_at = case when r.any_left then now() + ${p.leaseSeconds}::int * interval '1 second' end,
             updated_at = now()
        from remaining r
       where t.id = ${p.transformId.toString()}::bigint
      returning t.status)
    select coalesce((select status = 'APPLIED' from progress), false) as completed`);
  return row!.completed;
}
