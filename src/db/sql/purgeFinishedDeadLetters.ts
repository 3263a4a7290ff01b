import type { Db } from '../createDb.ts';

/** Key of the transaction-level advisory lock that lets one process at a time run retention. */
export const RETENTION_LOCK_KEY = 7_401_311_001n;

/**
 * Deletes SUCCEEDED, RESOLVED and DISCARDED events that ended more than `olderThanMs` ago, at
 * most `limit` per call (their attempts go by cascade). PENDING, PROCESSING and EXHAUSTED rows are
 * never touched. Returns null when another process holds the retention lock.
 */
export async function purgeFinishedDeadLetters(db: Db, olderThanMs: number, limit: number): Promise<number | null> {
  return db.$transaction(async (tx) => {
    // xact lock: released at commit or rollback, so a crashed runner can never hold it.
    const [lock] = await tx.$queryRaw<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(${RETENTION_LOCK_KEY}::bigint) as ok`;
    if (!lock?.ok) return null;
    const rows = await tx.$queryRaw<{ n: number }[]>`
      with old as (
        select id from dead_letters
         where status in ('SUCCEEDED', 'RESOLVED', 'DISCARDED')
           and resolved_at < now() - ${olderThanMs}::bigint * interval '1 millisecond'
         order by resolved_at
         limit ${limit}::int),
      gone as (delete from dead_letters d using old where d.id = old.id returning d.id)
      select count(*)::int as n from gone`;
    return rows[0]?.n ?? 0;
  });
}
