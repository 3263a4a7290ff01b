import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface GuardWindow {
  /** Delivery outcomes in the window (at most windowSize). */
  outcomes: number;
  failures: number;
  /** The newest delivery attempt id in the window (0 when empty). */
  lastAttemptId: bigint;
}

/**
 * The guard's window: the last `windowSize` delivery outcomes of this redrive's items after
 * `afterAttemptId` (LEASE_LOST is a worker's crash, not the target's answer, so it is left out).
 * One indexed walk: delivery_attempts backwards by primary key, each row probed against the
 * redrive_items primary key, stopping after `windowSize` matches.
 */
export async function readRedriveGuardWindow(
  db: Db,
  p: { redriveId: bigint; afterAttemptId: bigint; windowSize: number },
): Promise<GuardWindow> {
  const [row] = await runSql<{ outcomes: number; failures: number; last_attempt_id: bigint }>(db, Prisma.sql`
    select count(*)::int as outcomes,
           count(*) filter (where w.outcome <> 'SUCCEEDED')::int as failures,
           coalesce(max(w.id), 0)::bigint as last_attempt_id
      from (select a.id, a.outcome from delivery_attempts a
             where a.id > ${p.afterAttemptId.toString()}::bigint and a.outcome <> 'LEASE_LOST'
               and exists (select 1 from redrive_items i
                            where i.redrive_id = ${p.redriveId.toString()}::bigint and i.dead_letter_id = a.dead_letter_id)
             order by a.id desc
             limit ${p.windowSize}::int) w`);
  return { outcomes: row!.outcomes, failures: row!.failures, lastAttemptId: row!.last_attempt_id };
}
