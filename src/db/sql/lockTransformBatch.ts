import type { DeadLetterStatus, PatchKind, TransformStatus } from '../../generated/prisma/enums.ts';
import type { Queryable } from './queryable.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface HeldTransform {
  id: bigint;
  status: Extract<TransformStatus, 'RUNNING' | 'UNDOING'>;
  kind: PatchKind;
  patch: unknown;
  requeue: boolean;
  skipFailing: boolean;
  createdBy: string;
  reason: string | null;
  failures: unknown;
}

export interface TransformTarget {
  id: bigint;
  /** Null when the event was deleted since it was validated. */
  current: { status: DeadLetterStatus; payloadText: string; isUnchangedSinceValidated: boolean } | null;
}

/**
 * Locks a RUNNING or UNDOING transform this owner holds the lease on (FOR UPDATE, until the
 * caller's transaction ends), or returns null: paused by an undo, finished, or the lease was lost.
 */
export async function lockHeldTransform(db: Queryable, p: { id: bigint; owner: string }): Promise<HeldTransform | null> {
  const [row] = await runSql<{
    id: bigint; status: HeldTransform['status']; kind: PatchKind; patch: unknown; requeue: boolean; skip_failing: boolean;
    created_by: string; reason: string | null; failures: unknown;
  }>(db, Prisma.sql`
    select id, status, kind, patch, requeue, skip_failing, created_by, reason, failures from transforms
     where id = ${p.id.toString()}::bigint and status in ('RUNNING', 'UNDOING') and lease_owner = ${p.owner}::text
       for update`);
  return row
    ? { id: row.id, status: row.status, kind: row.kind, patch: row.patch, requeue: row.requeue, skipFailing: row.skip_failing, createdBy: row.created_by, reason: row.reason, failures: row.failures }
    : null;
}

/**
 * The next `limit` targets of a transform, in id order, with their events locked (FOR UPDATE) as
 * they are now: a write waiting on one of them is seen after it commits, so the md5 comparison is
 * against the payload this batch will replace.
 */
export async function selectTransformTargets(db: Queryable, p: { transformId: bigint; limit: number }): Promise<TransformTarget[]> {
  const rows = await runSql<{ id: bigint; status: DeadLetterStatus | null; payload_text: string | null; same: boolean | null }>(db, Prisma.sql`
    with items as materialized (
      select dead_letter_id, payload_md5 from transform_items
       where transform_id = ${p.transformId.toString()}::bigint
       order by dead_letter_id limit ${p.limit}::int),
    locked as materialized (
      select d.id, d.status, d.payload::text as payload_text from dead_letters_current d
       where d.id in (select dead_letter_id from items)
       order by d.id
         for update)
    select i.dead_letter_id as id, l.status, l.payload_text, md5(l.payload_text)::uuid = i.payload_md5 as same
      from items i left join locked l on l.id = i.dead_letter_id
     order by i.dead_letter_id`);
  return rows.map((r) => ({
    id: r.id,
    current: r.payload_text === null ? null : { status: r.status!, payloadText: r.payload_text, isUnchangedSinceValidated: r.same === true },
  }));
}
