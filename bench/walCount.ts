// WAL written between two points, for the drain benches: records counted by pg_walinspect over the
// WAL between two LSNs, bytes from the LSN difference. Both are the whole server's WAL in that range,
// so anything else writing to this PostgreSQL meanwhile counts too: measure on a server of its own.
// pg_stat_wal would lag: a backend reports its WAL counts at most once a second, so a 5 s drain read
// through it could take in a second of the seed before it, or miss its own last second.
import type pg from 'pg';

export interface WalWritten {
  records: number;
  bytes: number;
}

/** The current WAL position. Creates pg_walinspect (superuser) if the database lacks it, so walSince can count. */
export async function walPosition(pool: pg.Pool): Promise<string> {
  await pool.query('create extension if not exists pg_walinspect');
  return (await pool.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0]!.lsn;
}

/** The WAL written since `from` (a walPosition). */
export async function walSince(pool: pg.Pool, from: string): Promise<WalWritten> {
  const { rows: [row] } = await pool.query<{ records: string; bytes: string }>(`
    select (select coalesce(sum(count), 0) from pg_get_wal_stats($1::pg_lsn, e.lsn))::text as records,
           pg_wal_lsn_diff(e.lsn, $1::pg_lsn)::text as bytes
      from (select pg_current_wal_lsn() as lsn) e`, [from]);
  return { records: Number(row!.records), bytes: Number(row!.bytes) };
}
