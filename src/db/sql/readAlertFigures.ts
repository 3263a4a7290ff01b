import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface AlertFigures {
  /** PENDING events, from the rollups (exact, kept by the triggers). */
  backlog: number;
  /** Seconds since the oldest due PENDING event became due; 0 when none is. */
  oldestPendingAgeSeconds: number;
  /** Events that are EXHAUSTED and were last changed within the last minute. */
  exhaustedLastMinute: number;
}

/**
 * The figures the metric alert triggers compare against, in one statement. The exhausted count
 * walks dead_letter_states_updated_idx over the last minute only.
 */
export async function readAlertFigures(db: Db): Promise<AlertFigures> {
  const [row] = await runSql<{ backlog: number; age: number; exhausted: number }>(db, Prisma.sql`
    select (select coalesce(sum(count), 0)::float8 from dead_letter_rollups where status = 'PENDING') as backlog,
           (select coalesce(extract(epoch from now() - min(next_attempt_at)), 0)::float8
              from dead_letter_states where status = 'PENDING' and next_attempt_at <= now()) as age,
           (select count(*)::float8 from dead_letter_states
             where updated_at > now() - interval '1 minute' and status = 'EXHAUSTED') as exhausted`);
  return { backlog: row!.backlog, oldestPendingAgeSeconds: Math.max(0, row!.age), exhaustedLastMinute: row!.exhausted };
}
