import type { Db } from '../createDb.ts';
import { redriveOutcomeRows, type RedriveOutcome } from './redriveOutcomeRows.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/**
 * The next `limit` ids (ascending, after `afterId`) of stored events this redrive requeued, of one
 * outcome when given. Walks the redrive's items in key order and stops at `limit`; a rare outcome
 * may walk the whole redrive to fill a page.
 */
export async function redriveEventIds(db: Db, p: { redriveId: bigint; afterId: bigint; outcome: RedriveOutcome | null; limit: number }): Promise<bigint[]> {
  const rows = await runSql<{ id: bigint }>(db, Prisma.sql`
    select o.dead_letter_id as id from (${redriveOutcomeRows(p.redriveId, p.afterId)}) o
     where o.outcome <> 'DELETED' and (${p.outcome}::text is null or o.outcome = ${p.outcome}::text)
     order by o.dead_letter_id
     limit ${p.limit}::int`);
  return rows.map((r) => r.id);
}
