import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { ASYNC_COMMIT } from './asyncCommit.ts';

/** Key of the transaction-level advisory lock that lets one process at a time run retention. */
export const RETENTION_LOCK_KEY = 7_401_311_001n;
/** How long deletions stay replayable for subscribers resuming with an old cursor. */
export const TOMBSTONE_RETENTION_DAYS = 7;

/** Where a retention pass has got to: the newest resolved_at and tombstone deleted_at it removed. */
export interface RetentionCursor {
  resolvedAt: Date | null;
  tombstonesDeletedAt: Date | null;
}

export interface PurgeBatch {
  /** Events deleted. */
  purged: number;
  /** Pass it to the next batch of the same pass. */
  cursor: RetentionCursor;
}

/** What a pass may delete, for the purge and for the read that finds where a pass begins. */
const FINISHED = Prisma.raw(`status in ('SUCCEEDED', 'RESOLVED', 'DISCARDED')`);
/** Events that ended before this are old enough to delete. */
const resolvedCutoff = (olderThanMs: number) => Prisma.sql`now() - ${olderThanMs}::bigint * interval '1 millisecond'`;
/** Tombstones older than this are trimmed. */
const TOMBSTONE_CUTOFF = Prisma.sql`now() - ${TOMBSTONE_RETENTION_DAYS}::int * interval '1 day'`;

/**
 * Where a pass from the oldest event should begin: the oldest purgeable event's `resolved_at` and
 * the oldest expired tombstone's `deleted_at` (each the cutoff itself when there is none), or null
 * while another process holds the retention lock. A read: it locks no row and takes no transaction
 * id, so it does not hold the live feed back (live-feed.md). The walk to the oldest live entry steps
 * over every entry deleted since VACUUM last ran, 0.1–0.65 s at 1M events (bench:live); inside the
 * first deleting batch, that walk kept the batch's transaction open, its xid taken at the first row
 * locked, past 200 ms.
 */
export async function oldestPurgeable(db: Db, olderThanMs: number): Promise<RetentionCursor | null> {
  const rows = await runSql<{ locked: boolean; resolved_from: Date; tombstones_from: Date }>(db, Prisma.sql`
    with lock as materialized (select pg_try_advisory_xact_lock(${RETENTION_LOCK_KEY}::bigint) as ok)
    select (select ok from lock) as locked,
           coalesce((select resolved_at from dead_letters_current
                      where (select ok from lock) and ${FINISHED} and resolved_at < ${resolvedCutoff(olderThanMs)}
                      order by resolved_at limit 1), ${resolvedCutoff(olderThanMs)}) as resolved_from,
           coalesce((select deleted_at from dead_letter_tombstones
                      where (select ok from lock) and deleted_at < ${TOMBSTONE_CUTOFF}
                      order by deleted_at limit 1), ${TOMBSTONE_CUTOFF}) as tombstones_from`);
  const row = rows[0];
  return row?.locked ? { resolvedAt: row.resolved_from, tombstonesDeletedAt: row.tombstones_from } : null;
}

/**
 * Deletes SUCCEEDED, RESOLVED and DISCARDED events that ended more than `olderThanMs` ago, at
 * most `limit` per call (their state rows and attempts go with them, by trigger). PENDING, PROCESSING and EXHAUSTED rows are
 * never touched, and an event another transaction holds is left for a later call. The same
 * statement trims up to `limit` tombstones (the live feed's record of deletions) older than
 * TOMBSTONE_RETENTION_DAYS. With `after` (the cursor the previous batch of a pass returned), it
 * starts where that batch ended. Returns null when another process holds the retention lock.
 */
export async function purgeFinishedDeadLetters(db: Db, olderThanMs: number, limit: number, after?: RetentionCursor): Promise<PurgeBatch | null> {
  // One statement, so one round trip holds the transaction open: as BEGIN, lock, SET LOCAL,
  // DELETE, COMMIT (an interactive transaction) it stayed open across four round trips, and on a
  // loaded machine, while this process waited for the CPU between them, COMMIT alone was seen at
  // 0.9 s (bench:live at 1M events, load ~40).
  // The xact lock is released at commit or rollback, so a crashed runner can never hold it; when
  // another process holds it, nothing is deleted (every part below is conditioned on it).
  // It commits asynchronously (asyncCommit.ts): the tombstones' NOTIFY takes the notify-queue lock,
  // and bench:retention at 10M saw inserts wait up to 181 ms behind a synchronous retention commit.
  // A crash can lose the last few batches' deletions; the rows are old and finished, and the next
  // pass deletes them again.
  // The rows (the event and its state row, through the view) are locked first, SKIP LOCKED and MATERIALIZED (an inlined CTE would lose the lock
  // clause's place). A row another transaction holds is skipped, not waited for: a requeue may be
  // turning it PENDING, and a DELETE that waited re-checked only the id and deleted the requeued
  // event (test/workers.retention.test.ts); a wait also kept this transaction open, holding back
  // the live feed's horizon. A locked row is re-checked against its newest version, so the status
  // and age hold at delete time. The next pass takes what was skipped.
  // Both walks start at the cursor (>=: rows that share a time are few): the entries a pass has
  // deleted stay in the resolved_at and deleted_at indexes until VACUUM can remove them, which no
  // snapshot older than the deletes allows (any transaction of the server holds one). From the
  // start of the index, each batch stepped over every entry the pass had deleted: at 1M events,
  // 52 ms of a 56 ms batch after 9,150 deletions, growing with the pass (bench:live).
  const rows = await runSql<{ locked: boolean; n: number; resolved_to: Date | null; tombstones_to: Date | null }>(db, Prisma.sql`
    with lock as materialized (
      select pg_try_advisory_xact_lock(${RETENTION_LOCK_KEY}::bigint) as ok, ${ASYNC_COMMIT}),
    old as materialized (
      select id, resolved_at from dead_letters_current
       where (select ok from lock)
         and ${FINISHED}
         and resolved_at < ${resolvedCutoff(olderThanMs)}
         and resolved_at >= coalesce(${after?.resolvedAt ?? null}::timestamptz, '-infinity')
       order by resolved_at
       limit ${limit}::int
       for update skip locked),
    gone as (delete from dead_letters d using old where d.id = old.id returning d.id),
    old_tombstones as materialized (
      select change_id, deleted_at from dead_letter_tombstones
       where (select ok from lock)
         and deleted_at < ${TOMBSTONE_CUTOFF}
         and deleted_at >= coalesce(${after?.tombstonesDeletedAt ?? null}::timestamptz, '-infinity')
       order by deleted_at limit ${limit}::int),
    trimmed as (delete from dead_letter_tombstones t where t.change_id in (select change_id from old_tombstones))
    select (select ok from lock) as locked, (select count(*)::int from gone) as n, (select max(resolved_at) from old) as resolved_to,
           (select max(deleted_at) from old_tombstones) as tombstones_to`);
  const row = rows[0];
  if (!row?.locked) return null;
  return {
    purged: row.n,
    cursor: {
      resolvedAt: row.resolved_to ?? after?.resolvedAt ?? null,
      tombstonesDeletedAt: row.tombstones_to ?? after?.tombstonesDeletedAt ?? null,
    },
  };
}
