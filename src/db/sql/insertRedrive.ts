import type { Db } from '../createDb.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';

export interface InsertRedriveParams {
  where: Prisma.Sql;
  allowed: DeadLetterStatus[];
  filterJson: string;
  ratePerSecond: number;
  batchSize: number;
  resetAttempts: boolean;
  force: boolean;
  reason: string | null;
  actor: string;
}

/** Creates a RUNNING redrive and fixes its events (those eligible now) in one statement. */
export async function insertRedrive(db: Db, p: InsertRedriveParams): Promise<{ id: bigint; total: number }> {
  // One snapshot: the count stored as `total` is exactly the set of items (a sibling CTE cannot
  // see rows another CTE inserts, so the total is computed from the selection, not the items).
  const [row] = await db.$queryRaw<{ id: bigint; total: number }[]>`
    with selected as materialized (
      select d.id from dead_letters d where (${p.where}) and d.status::text = any(${p.allowed}::text[])),
    redrive as (
      insert into redrives (status, filter, rate_per_second, batch_size, reset_attempts, force, reason, created_by, total)
      values ('RUNNING', ${p.filterJson}::jsonb, ${p.ratePerSecond}::int, ${p.batchSize}::int, ${p.resetAttempts}::boolean,
              ${p.force}::boolean, ${p.reason}::text, ${p.actor}::text, (select count(*) from selected))
      returning id, total),
    items as (
      insert into redrive_items (redrive_id, dead_letter_id)
      select r.id, s.id from redrive r, selected s)
    select id, total from redrive`;
  return row!;
}
