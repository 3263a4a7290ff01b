import type { Db } from '../createDb.ts';
import { REDRIVE_OUTCOMES, redriveOutcomeRows, type RedriveOutcome } from './redriveOutcomeRows.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export type RedriveOutcomeCounts = Record<RedriveOutcome, number>;

/** How many of the events this redrive requeued are in each outcome now (every outcome present). */
export async function countRedriveOutcomes(db: Db, redriveId: bigint): Promise<RedriveOutcomeCounts> {
  const rows = await runSql<{ outcome: RedriveOutcome; n: number }>(db, Prisma.sql`
    select o.outcome, count(*)::int as n from (${redriveOutcomeRows(redriveId)}) o group by o.outcome`);
  const counts = Object.fromEntries(REDRIVE_OUTCOMES.map((o) => [o, 0])) as RedriveOutcomeCounts;
  for (const row of rows) counts[row.outcome] = row.n;
  return counts;
}
