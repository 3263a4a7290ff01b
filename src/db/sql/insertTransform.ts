import type { Db } from '../createDb.ts';
import type { PatchKind } from '../../generated/prisma/enums.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface InsertTransformParams {
  kind: PatchKind;
  patchJson: string;
  filterJson: string;
  requeue: boolean;
  skipFailing: boolean;
  reason: string | null;
  actor: string;
  /** How many targets it will have. */
  matched: number;
  /** The request recording it: its lease keeps the runner from declaring it abandoned. */
  owner: string;
  leaseSeconds: number;
}

/** Records a PREPARING transform, leased to the request that now writes its targets. */
export async function insertTransform(db: Db, p: InsertTransformParams): Promise<bigint> {
  const [row] = await runSql<{ id: bigint }>(db, Prisma.sql`
    insert into transforms (status, kind, patch, filter, requeue, skip_failing, reason, created_by, matched, lease_owner, lease_expires_at)
    values ('PREPARING', ${p.kind}::"PatchKind", ${p.patchJson}::jsonb, ${p.filterJson}::jsonb, ${p.requeue}::boolean,
            ${p.skipFailing}::boolean, ${p.reason}::text, ${p.actor}::text, ${p.matched}::int,
            ${p.owner}::text, now() + ${p.leaseSeconds}::int * interval '1 second')
    returning id`);
  return row!.id;
}

/**
 * Adds targets to a PREPARING transform this owner holds (id + md5 of the payload::text that was
 * validated, as 32 hex digits) and renews the lease, in one statement. Returns false when the
 * transform is no longer PREPARING under this owner (the runner declared it abandoned).
 */
export async function insertTransformItems(db: Db, p: { transformId: bigint; owner: string; leaseSeconds: number; ids: bigint[]; md5s: string[] }): Promise<boolean> {
  const [row] = await runSql<{ held: boolean }>(db, Prisma.sql`
    with t as (
      update transforms set lease_expires_at = now() + ${p.leaseSeconds}::int * interval '1 second'
       where id = ${p.transformId.toString()}::bigint and status = 'PREPARING' and lease_owner = ${p.owner}::text
      returning id),
    items as (
      insert into transform_items (transform_id, dead_letter_id, payload_md5)
      select t.id, e.id, e.md5::uuid from t, unnest(${p.ids.map(String)}::bigint[], ${p.md5s}::text[]) as e(id, md5))
    select exists (select 1 from t) as held`);
  return row!.held;
}

/**
 * PREPARING → RUNNING once every target is recorded; with `keepLease` the lease stays (the
 * request runs the first batch itself) or is dropped for the runner's next poll.
 */
export async function startPreparedTransform(db: Db, p: { transformId: bigint; owner: string; keepLease: boolean }): Promise<boolean> {
  const [row] = await runSql<{ n: number }>(db, Prisma.sql`
    with started as (
      update transforms
         set status = 'RUNNING',
             lease_owner = case when ${p.keepLease}::boolean then lease_owner end,
             lease_expires_at = case when ${p.keepLease}::boolean then lease_expires_at end,
             updated_at = now()
       where id = ${p.transformId.toString()}::bigint and status = 'PREPARING' and lease_owner = ${p.owner}::text
      returning id)
    select count(*)::int as n from started`);
  return row!.n === 1;
}
