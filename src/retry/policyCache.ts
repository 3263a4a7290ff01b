import type { Db } from '../db/createDb.ts';
import type { RetryPolicy } from '../generated/prisma/client.ts';

export type PolicySource = () => Promise<Map<string, RetryPolicy>>;

/**
 * Policies by event type, re-read at most every `ttlMs`. The claim reads `paused`, `ordered`,
 * targets and limits from the table itself, so a stale copy only delays a change of target,
 * timeout or backoff by up to `ttlMs`. Saves one round trip per pass (~12% of a no-op drain).
 */
export function createPolicyCache(db: Db, ttlMs: number, nowMs: () => number = Date.now): PolicySource {
  let cached: { at: number; policies: Promise<Map<string, RetryPolicy>> } | null = null;
  return () => {
    if (!cached || nowMs() - cached.at >= ttlMs) {
      const policies = readPolicies(db);
      cached = { at: nowMs(), policies };
      policies.catch(() => (cached = null));
    }
    return cached.policies;
  };
}

export async function readPolicies(db: Db): Promise<Map<string, RetryPolicy>> {
  return new Map((await db.retryPolicy.findMany()).map((p) => [p.eventType, p]));
}
