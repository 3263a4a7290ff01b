import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';

/**
 * How many events this redrive requeued are still waiting for a successful delivery (PENDING or
 * PROCESSING, at or below its last_id), counted up to `cap` only: the runner only asks "a window
 * ahead yet?". Walks the pending rows by the status index, then the leased ones by the lease index
 * (the status index leaves PROCESSING out), each probed against the redrive_items primary key, and
 * stops at `cap`.
 */
export async function countRedriveAwaitingDelivery(db: Db, p: { redriveId: bigint; cap: number }): Promise<number> {
  // The status is a literal in each branch, so PostgreSQL can prove which index serves it.
  const awaiting = (status: Prisma.Sql) => Prisma.sql`
      select 1 from dead_letter_states d, r
       where d.status = ${status} and d.id <= r.last_id
         and exists (select 1 from redrive_items i where i.redrive_id = r.id and i.dead_letter_id = d.id)`;
  const [row] = await runSql<{ n: number }>(db, Prisma.sql`
    with r as (select ${p.redriveId.toString()}::bigint as id, (select last_id from redrives where id = ${p.redriveId.toString()}::bigint) as last_id)
    select count(*)::int as n from (
      ${awaiting(Prisma.raw(`'PENDING'`))}
      union all
      ${awaiting(Prisma.raw(`'PROCESSING'`))}
       limit ${p.cap}::int) x`);
  return row!.n;
}
