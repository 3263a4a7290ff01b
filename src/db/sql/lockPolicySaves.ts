import { Prisma } from '../../generated/prisma/client.ts';
import { runSql } from '../runSql.ts';
import type { Queryable } from './queryable.ts';

/** Key of the transaction-level advisory lock that serialises policy saves that may release held events. */
export const POLICY_SAVE_LOCK_KEY = 7_401_311_002n;

/**
 * Waits for the policy-save lock (released at commit or rollback). Two saves counting the held
 * events at once could each start a release of the same events; saves are rare, so they queue.
 */
export async function lockPolicySaves(tx: Queryable): Promise<void> {
  await runSql(tx, Prisma.sql`select true as locked from pg_advisory_xact_lock(${POLICY_SAVE_LOCK_KEY}::bigint)`);
}
