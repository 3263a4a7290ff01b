import type { Db } from '../createDb.ts';
import { redriveOutcomeRows } from './redriveOutcomeRows.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface RedriveFailureGroupRow {
  groupId: bigint;
  failing: number;
  exhausted: number;
}

/**
 * The error groups of the events this redrive requeued that are FAILING or EXHAUSTED now, most
 * such events first (ties by group id), at most `limit`. The group is the event's own (the
 * producer's error): failed redeliveries are recorded as attempts and do not regroup an event.
 */
export async function redriveFailureGroups(db: Db, p: { redriveId: bigint; limit: number }): Promise<RedriveFailureGroupRow[]> {
  const rows = await runSql<{ group_id: bigint; failing: number; exhausted: number }>(db, Prisma.sql`
    select w.error_group_id as group_id,
           count(*) filter (where o.outcome = 'FAILING')::int as failing,
           count(*) filter (where o.outcome = 'EXHAUSTED')::int as exhausted
      from (${redriveOutcomeRows(p.redriveId)}) o
      join dead_letters w on w.id = o.dead_letter_id
     where o.outcome in ('FAILING', 'EXHAUSTED') and w.error_group_id is not null
     group by w.error_group_id
     order by count(*) desc, w.error_group_id
     limit ${p.limit}::int`);
  return rows.map((r) => ({ groupId: r.group_id, failing: r.failing, exhausted: r.exhausted }));
}
