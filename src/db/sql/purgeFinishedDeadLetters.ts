import type { Db } from '../createDb.ts';

/** Key of the transaction-level advisory lock that lets one process at a time run retention. */
export const RETENTION_LOCK_KEY = 7_401_311_001n;
/** How long deletions stay replayable for subscribers resuming with an old cursor. */
export const TOMBSTONE_RETENTION_DAYS = 7;

/**
 * Deletes SUCCEEDED, RESOLVED and DISCARDED events that ended more than `olderThanMs` ago, at
 * most `limit` per call (their state rows and attempts go with them, by trigger). PENDING, PROCESSING and EXHAUSTED rows are
 * never touched. The same statement trims up to `limit` tombstones (the live feed's record of
 * deletions) older than TOMBSTONE_RETENTION_DAYS. Returns null when another process holds the
 * retention lock.
 */
export async function purgeFinishedDeadLetters(db: Db, olderThanMs: number, limit: number): Promise<number | null> {
  return db.$transaction(async (tx) => {
    // xact lock: released at commit or rollback, so a crashed runner can never hold it.
    const [lock] = await tx.$queryRaw<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(${RETENTION_LOCK_KEY}::bigint) as ok`;
    if (!lock?.ok) return null;
    const rows = await tx.$queryRaw<{ n: number }[]>`
      with old as (
        select id from dead_letter_states
         where status in ('SUCCEEDED', 'RESOLVED', 'DISCARDED')
           and resolved_at < now() - ${olderThanMs}::bigint * interval '1 millisecond'
         order by resolved_at
         limit ${limit}::int),
      gone as (delete from dead_letters d using old where d.id = old.id returning d.id),
      trimmed as (
        delete from dead_letter_tombstones t
         where t.change_id in (select change_id from dead_letter_tombstones
                                where deleted_at < now() - ${TOMBSTONE_RETENTION_DAYS}::int * interval '1 day'
                                order by deleted_at limit ${limit}::int))
      select count(*)::int as n from gone`;
    return rows[0]?.n ?? 0;
  });
}
