import { Prisma } from '../../generated/prisma/client.ts';
import { runSql } from '../runSql.ts';
import type { Queryable } from './queryable.ts';
import { stamp } from './stamp.ts';

/**
 * Where a ramped release parks its events until its redrive reaches them: a PENDING event is
 * claimed only once `next_attempt_at <= now()`, so a parked event is never due, and the redrive's
 * batch (requeueRedriveBatch.ts) sets it to now() at the ramp's rate. The held events show it as
 * the reason RELEASING (heldEvents.ts), and a requeue of the event releases it at once.
 */
export const RELEASE_PARKED_AT = new Date('9999-01-01T00:00:00Z');

/**
 * Parks the PENDING items of redrive `redriveId` (one statement; run in the transaction that
 * created the redrive, so no item is due between the two). Returns how many it parked.
 */
export async function parkRedriveItems(db: Queryable, redriveId: bigint): Promise<number> {
  const [row] = await runSql<{ parked: number }>(db, Prisma.sql`
    with parked as (
      update dead_letter_states d
         set next_attempt_at = ${RELEASE_PARKED_AT}::timestamptz, ${stamp('d')}
        from redrive_items i
       where i.redrive_id = ${redriveId.toString()}::bigint and d.id = i.dead_letter_id and d.status = 'PENDING'
      returning d.id)
    select count(*)::int as parked from parked`);
  return row!.parked;
}
