// WAL written between two points, for the drain benches: the records pg_walinspect finds in the
// server's WAL between two LSNs that belong to the measured database (a block reference into it,
// or the transaction's own records, such as its commit, of a transaction that wrote one), and their
// bytes. Other databases' writes in the same range (other tests and benches on a shared server)
// are left out; server-wide records (checkpoints, running-xacts snapshots) too.
// Both points are insert positions (record boundaries). PostgreSQL 15 reads only flushed WAL ("cannot
// accept future end LSN" for pg_current_wal_lsn(), which can run ahead of the flush), so walSince
// waits until the flush has passed its end point; the WAL writer gets there within a few
// wal_writer_delays, and every commit of the drain already has.
// A checkpoint during a long drain on a busy server may recycle the segments holding its start
// ("requested WAL segment … has already been removed"), so a temporary physical replication slot
// keeps them from the start until the count: temporary, it goes with its session, also when the
// bench dies in between.
// pg_stat_wal would lag: a backend reports its WAL counts at most once a second, so a 5 s drain read
// through it could take in a second of the seed before it, or miss its own last second.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

export interface WalWritten {
  records: number;
  bytes: number;
}

/** A start point: its LSN and the session whose slot keeps the WAL after it. */
export interface WalMark {
  lsn: string;
  session: pg.Client;
}

const FLUSH_WAIT_MS = 10_000;

/** Marks the current WAL position. Creates pg_walinspect (superuser) if the database lacks it, so walSince can count. */
export async function walPosition(pool: pg.Pool): Promise<WalMark> {
  await pool.query('create extension if not exists pg_walinspect');
  const session = new pg.Client({ ...pool.options, application_name: 'bench-wal' });
  // Its database may be dropped WITH (FORCE) while it is still open, after a failure.
  session.on('error', () => {});
  try {
    await session.connect();
    await session.query(`select pg_create_physical_replication_slot('bench_wal_' || pg_backend_pid(), true, true)`);
    const { rows: [row] } = await session.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn');
    return { lsn: row!.lsn, session };
  } catch (error) {
    await session.end().catch(() => {});
    throw error;
  }
}

/** The WAL this database wrote since `mark` (a walPosition, released here). */
export async function walSince(pool: pg.Pool, mark: WalMark): Promise<WalWritten> {
  try {
    const from = mark.lsn;
    const to = (await pool.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn')).rows[0]!.lsn;
    for (const deadline = performance.now() + FLUSH_WAIT_MS; ;) {
      const { rows: [r] } = await pool.query<{ flushed: boolean; empty: boolean }>(
        'select pg_current_wal_flush_lsn() >= $2::pg_lsn as flushed, $2::pg_lsn <= $1::pg_lsn as empty', [from, to]);
      if (r!.empty) return { records: 0, bytes: 0 };
      if (r!.flushed) break;
      if (performance.now() > deadline) throw new Error(`WAL up to ${to} not flushed after ${FLUSH_WAIT_MS / 1000} s`);
      await sleep(10);
    }
    const { rows: [row] } = await pool.query<{ records: string; bytes: string }>(`
      with r as materialized (
        select xid, record_length, block_ref like '% rel %/' || (select oid from pg_database where datname = current_database()) || '/%' as here
          from pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)),
      ours as (select distinct xid from r where here and xid <> 0)
      select count(*)::text as records, coalesce(sum(record_length), 0)::text as bytes
        from r where here or xid in (select xid from ours)`, [from, to]);
    return { records: Number(row!.records), bytes: Number(row!.bytes) };
  } finally {
    await mark.session.end().catch(() => {});
  }
}
