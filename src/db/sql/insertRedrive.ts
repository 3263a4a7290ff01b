import type { Queryable } from './queryable.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import { redriveLimitsJson } from './redriveLimitsJson.ts';
import { runSql } from '../runSql.ts';

export interface InsertRedriveParams {
  where: Prisma.Sql;
  allowed: DeadLetterStatus[];
  filterJson: string;
  startRatePerSecond: number;
  maxRatePerSecond: number;
  rampSeconds: number;
  pauseWhenFailureRateAbove: number | null;
  windowSize: number;
  batchSize: number;
  resetAttempts: boolean;
  force: boolean;
  /** Deliver its events to their origin instead of their policy's target. */
  isToSource: boolean;
  reason: string | null;
  actor: string;
}

/**
 * Creates a RUNNING redrive, fixes its events (those eligible now) and records STARTED with its
 * limits, in one statement. The guard's window starts after the newest delivery attempt now.
 */
export async function insertRedrive(db: Queryable, p: InsertRedriveParams): Promise<{ id: bigint; total: number }> {
  // One snapshot: the count stored as `total` is exactly the set of items (a sibling CTE cannot
  // see rows another CTE inserts, so the total is computed from the selection, not the items).
  const [row] = await runSql<{ id: bigint; total: number }>(db, Prisma.sql`
    with selected as materialized (
      select d.id from dead_letters_current d where (${p.where}) and d.status::text = any(${p.allowed}::text[])),
    redrive as (
      insert into redrives (status, filter, rate_per_second, start_rate_per_second, ramp_seconds, pause_when_failure_rate_above,
                            window_size, guard_after_attempt_id, batch_size, reset_attempts, force, reason, created_by, total, destination)
      values ('RUNNING', ${p.filterJson}::jsonb, ${p.maxRatePerSecond}::int, ${p.startRatePerSecond}::int, ${p.rampSeconds}::int,
              ${p.pauseWhenFailureRateAbove}::float8, ${p.windowSize}::int,
              (select coalesce(max(id), 0) from delivery_attempts), ${p.batchSize}::int, ${p.resetAttempts}::boolean,
              ${p.force}::boolean, ${p.reason}::text, ${p.actor}::text, (select count(*) from selected),
              ${p.isToSource ? 'SOURCE' : 'POLICY'}::text)
      returning *),
    items as (
      insert into redrive_items (redrive_id, dead_letter_id)
      select r.id, s.id from redrive r, selected s),
    history as (
      insert into redrive_actions (redrive_id, action, actor, reason, after)
      select r.id, 'STARTED', r.created_by, r.reason, ${redriveLimitsJson('r')} || jsonb_build_object('total', r.total) from redrive r)
    select id, total from redrive`);
  return row!;
}
