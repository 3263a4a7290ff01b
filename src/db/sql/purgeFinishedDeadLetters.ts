import type { Db } from '../createDb.ts';

/** Key of the transaction-level advisory lock that lets one process at a time run retention. */
export const RETENTION_LOCK_KEY = 7_401_311_001n;
/** How long deletions stay replayable for subscribers resuming with an old cursor. */
export const TOMBSTONE_RETENTION_DAYS = 7;

/**
 * Deletes SUCCEEDED, RESOLVED and DISCARDED events that ended more than `olderThanMs` ago, at
 * most `limit` per call (their attempts go by cascade). PENDING, PROCESSING and EXHAUSTED rows are
 * never touched, and an event another transaction holds is left for a later call. The same
 * statement trims up to `limit` tombstones (the live feed's record of deletions) older than
 * TOMBSTONE_RETENTION_DAYS. Returns null when another process holds the retention lock.
 */
export async function purgeFinishedDeadLetters(db: Db, olderThanMs: number, limit: number): Promise<number | null> {
  return db.$transaction(async (tx) => {
    // xact lock: released at commit or rollback, so a crashed runner can never hold it.
    const [lock] = await tx.$queryRaw<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(${RETENTION_LOCK_KEY}::bigint) as ok`;
    if (!lock?.ok) return null;
    // The tombstones' NOTIFY makes this commit take PostgreSQL's one notify-queue lock (shared by
    // every database of the server), and a synchronous commit holds it until the commit record is
    // flushed: every other NOTIFYing commit, i.e. every ingest, waits behind that flush
    // (bench:retention at 10M saw inserts wait up to 181 ms behind the retention client). An
    // asynchronous commit releases it without waiting. A crash can lose the last few batches'
    // deletions (at most wal_writer_delay × 3); the rows are old and finished, and the next pass
    // deletes them again.
    await tx.$executeRaw`set local synchronous_commit = off`;
    // The rows are locked first, SKIP LOCKED and MATERIALIZED (an inlined CTE would lose the lock
    // clause's place). A row another transaction holds is skipped, not waited for: a requeue may be
    // turning it PENDING, and a DELETE that waited re-checked only the id and deleted the requeued
    // event (test/workers.retention.test.ts); a wait also kept this transaction open, holding back
    // the live feed's horizon. A locked row is re-checked against its newest version, so the status
    // and age hold at delete time. The next pass takes what was skipped.
    const rows = await tx.$queryRaw<{ n: number }[]>`
      with old as materialized (
        select id from dead_letters
         where status in ('SUCCEEDED', 'RESOLVED', 'DISCARDED')
           and resolved_at < now() - ${olderThanMs}::bigint * interval '1 millisecond'
         order by resolved_at
         limit ${limit}::int
         for update skip locked),
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
