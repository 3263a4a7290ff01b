// The delivery rollup ledger (migration 20261206120000_delivery_rollups): fold a batch, coarsen old
// minutes into the day chart's steps, trim, and read a window grouped by event type or target.
import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { ASYNC_COMMIT } from './asyncCommit.ts';
import type { CompactionBatch } from './compactRollups.ts';

/**
 * One statement, so one short transaction, committed asynchronously (asyncCommit.ts): the groups of
 * the next `maxRows` ledger rows after `afterId`.
 */
export async function compactDeliveryRollupBatch(db: Db, afterId: bigint, maxRows: number): Promise<CompactionBatch> {
  const rows = await runSql<{ last_id: bigint | null; scanned: number; removed: bigint }>(db, Prisma.sql`
    select b.*, ${ASYNC_COMMIT} from lazarus_compact_delivery_rollups_batch(${afterId}::bigint, ${maxRows}::int) b`);
  return { lastId: rows[0]?.last_id ?? null, scanned: rows[0]?.scanned ?? 0, removed: Number(rows[0]?.removed ?? 0) };
}

/** Deletes up to `maxRows` ledger rows of minutes before `before` (walks the bucket index); returns how many. */
export async function trimDeliveryRollups(db: Db, before: Date, maxRows: number): Promise<number> {
  const [row] = await runSql<{ n: number }>(db, Prisma.sql`
    with gone as (
      delete from delivery_attempt_rollups where id in (
        select id from delivery_attempt_rollups where bucket < ${before}::timestamptz limit ${maxRows}::int)
      returning 1)
    select count(*)::int as n from gone`);
  return row!.n;
}

/**
 * Folds the minutes of [from, to) into steps of `stepMinutes` (aligned to the UTC epoch, as the
 * charts' windows are): one row per step and group, in one statement. A span whose rows are all on
 * step boundaries already is left alone. Returns the rows removed.
 */
export async function coarsenDeliveryRollups(db: Db, from: Date, to: Date, stepMinutes: number): Promise<number> {
  const [row] = await runSql<{ n: number }>(db, Prisma.sql`
    with step as (select ${stepMinutes}::int * interval '1 minute' as width),
    gone as (
      delete from delivery_attempt_rollups
       where bucket >= ${from}::timestamptz and bucket < ${to}::timestamptz
         and exists (select 1 from delivery_attempt_rollups, step
                      where bucket >= ${from}::timestamptz and bucket < ${to}::timestamptz
                        and bucket <> date_bin(step.width, bucket, timestamptz 'epoch'))
      returning bucket, event_type, target, outcome, latency_bucket, count),
    merged as (
      insert into delivery_attempt_rollups (bucket, event_type, target, outcome, latency_bucket, count)
      select date_bin(step.width, bucket, timestamptz 'epoch'), event_type, target, outcome, latency_bucket, sum(count)
        from gone, step group by 1, 2, 3, 4, 5 having sum(count) <> 0
      returning 1)
    select ((select count(*) from gone) - (select count(*) from merged))::int as n`);
  return row!.n;
}

export type DeliveryGrouping = 'EVENT_TYPE' | 'TARGET';

/** A group's rows of one step (latencyBucket null) or of one latency bucket over the window (stepStart null). */
export interface DeliveryRollupRow {
  key: string;
  stepStart: Date | null;
  latencyBucket: number | null;
  deliveries: bigint;
  succeeded: bigint;
}

// Column names from a closed set, never from input.
const KEY_COLUMN: Record<DeliveryGrouping, Prisma.Sql> = { EVENT_TYPE: Prisma.sql`event_type`, TARGET: Prisma.sql`target` };

/**
 * One index-only range scan of [from, to) summed two ways: per key and step (`stepMinutes` wide,
 * aligned to `from`), and per key and latency bucket over the whole window. Lost leases are not
 * deliveries: they are left out.
 */
export function deliveryRollupsSql(groupBy: DeliveryGrouping, from: Date, to: Date, stepMinutes: number): Prisma.Sql {
  return Prisma.sql`
    select key, step_start as "stepStart", latency_bucket::int as "latencyBucket",
           sum(count)::bigint as deliveries, coalesce(sum(count) filter (where outcome = 'SUCCEEDED'), 0)::bigint as succeeded
      from (select ${KEY_COLUMN[groupBy]} as key, outcome, latency_bucket, count,
                   date_bin(${stepMinutes}::int * interval '1 minute', bucket, ${from}::timestamptz) as step_start
              from delivery_attempt_rollups
             where bucket >= ${from}::timestamptz and bucket < ${to}::timestamptz and outcome <> 'LEASE_LOST') r
     group by grouping sets ((key, step_start), (key, latency_bucket))
    having sum(count) <> 0`;
}
