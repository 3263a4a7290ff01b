import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface RequestCount {
  /** Requests by this principal in the current window, this one included. */
  count: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

// One statement: an upsert on (principal, current minute), so concurrent requests on any
// instance count exactly. Windows older than the previous minute are deleted in the same
// statement, a few rows at a time, so the table stays tiny without a separate sweeper.
// `at` pins the clock (tests); by default the window is the database's now(), the same on every
// instance whatever their own clocks say.
export async function countRequest(db: Db, principal: string, at?: Date): Promise<RequestCount> {
  const rows = await runSql<{ count: number; reset_seconds: number }>(db, Prisma.sql`
    with clock as (select coalesce(${at ?? null}::timestamptz, now()) as now),
    expired as (
      delete from rate_limit_windows
       where ctid = any(array(select ctid from rate_limit_windows
                               where window_start < date_trunc('minute', (select now from clock)) - interval '1 minute'
                               limit 10)))
    insert into rate_limit_windows as w (principal, window_start, count)
    values (${principal}, date_trunc('minute', (select now from clock)), 1)
    on conflict (principal, window_start) do update set count = w.count + 1
    returning w.count,
              ceil(extract(epoch from (w.window_start + interval '1 minute' - (select now from clock))))::int as reset_seconds`);
  const row = rows[0]!;
  return { count: row.count, resetSeconds: Math.max(1, row.reset_seconds) };
}
