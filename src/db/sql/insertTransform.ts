import type { Db } from '../createDb.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import type { DeadLetterStatus, PatchKind } from '../../generated/prisma/enums.ts';

export interface InsertTransformParams {
  where: Prisma.Sql;
  allowed: DeadLetterStatus[];
  /** Only events up to this id (the last one the validation pass saw). */
  maxId: bigint;
  kind: PatchKind;
  patchJson: string;
  filterJson: string;
  requeue: boolean;
  skipFailing: boolean;
  reason: string | null;
  actor: string;
  /** Who runs the first batch (the API request, for a transform of one batch); null: the runner. */
  leaseOwner: string | null;
  leaseSeconds: number;
}

/**
 * Records a RUNNING transform and its exact targets in one statement: every selected event up to
 * `maxId` with the md5 of its payload::text now, so a batch can tell an event edited since.
 * `matched` is the number of targets, from the same snapshot as the items.
 */
export async function insertTransform(db: Db, p: InsertTransformParams): Promise<{ id: bigint; matched: number }> {
  const [row] = await db.$queryRaw<{ id: bigint; matched: number }[]>`
    with selected as materialized (
      select d.id, md5(d.payload::text)::uuid as payload_md5 from dead_letters d
       where (${p.where}) and d.status::text = any(${p.allowed}::text[]) and d.id <= ${p.maxId.toString()}::bigint),
    transform as (
      insert into transforms (status, kind, patch, filter, requeue, skip_failing, reason, created_by, matched, lease_owner, lease_expires_at)
      values ('RUNNING', ${p.kind}::"PatchKind", ${p.patchJson}::jsonb, ${p.filterJson}::jsonb, ${p.requeue}::boolean,
              ${p.skipFailing}::boolean, ${p.reason}::text, ${p.actor}::text, (select count(*) from selected),
              ${p.leaseOwner}::text, case when ${p.leaseOwner}::text is null then null else now() + ${p.leaseSeconds}::int * interval '1 second' end)
      returning id, matched),
    items as (
      insert into transform_items (transform_id, dead_letter_id, payload_md5)
      select t.id, s.id, s.payload_md5 from transform t, selected s)
    select id, matched from transform`;
  return row!;
}
