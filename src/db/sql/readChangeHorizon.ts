import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { CHANGE_HORIZON_SQL } from './changeHorizon.ts';

// Where a new feed starts: every transaction of this database below the horizon has ended, so the
// feed's first cursor (horizon, 0) misses nothing that commits later (it may resend a few changes
// of transactions that were still open at start-up).
const HORIZON = Prisma.sql`select h.horizon::text as horizon from ${Prisma.raw(CHANGE_HORIZON_SQL)} h`;

export async function readChangeHorizon(db: Db): Promise<bigint> {
  const rows = await runSql<{ horizon: string }>(db, HORIZON, { name: 'change_horizon' });
  return BigInt(rows[0]!.horizon);
}
