// The raw-SQL claim/complete loop of bench:retry ("the limit") and bench:retry:hot-table: the
// engine's writes with no engine around it. A batched SKIP LOCKED claim of 100 with lease and
// fencing token, and one fenced completion statement per batch that also inserts the attempt rows.
// Each completion runs alongside the next claim, on the pool's second connection, as the retry
// loop's do.
import type pg from 'pg';
import { stamp } from '../src/db/sql/stamp.ts';

/** Events per claim, in both benches. */
export const BATCH = 100;
const LEASE = `status = 'PROCESSING', attempts = t.attempts + 1, lease_owner = 'raw', lease_token = gen_random_uuid(),
               lease_expires_at = now() + interval '30 seconds'`;

/** The row stamp the engine writes with each update of dead_letter_states (src/db/sql/stamp.ts); none elsewhere. */
const stampOf = (table: string, also = '') => (table === 'dead_letter_states' ? `, ${also}${stamp('t').sql}` : '');

/** A claim on `table` (id, status, attempts, next_attempt_at and the lease columns) of due rows of one type. */
export const narrowClaim = (table: string, eventType: string) => `
  with due as materialized (
    select id from ${table} where status = 'PENDING' and event_type = '${eventType}' and next_attempt_at <= now()
     order by next_attempt_at, id limit ${BATCH} for update skip locked),
  claimed as (update ${table} t set ${LEASE}${stampOf(table)} from due where t.id = due.id returning t.id, t.lease_token)
  select c.id, c.lease_token, d.payload from claimed c join dead_letters d on d.id = c.id`;

/** The fenced completion of claimed rows of `table` ($1 ids, $2 tokens), with their attempt rows unless told not to. */
export const completeSql = (table: string, { attemptRows = true } = {}) => `
  with done as (
    update ${table} t set status = 'SUCCEEDED', next_attempt_at = null, lease_owner = null, lease_token = null, lease_expires_at = null
                          ${stampOf(table, 'resolved_at = now(), ')}
      from unnest($1::bigint[], $2::uuid[]) as i(id, token)
     where t.id = i.id and t.lease_token = i.token and t.status = 'PROCESSING'
    returning t.id, t.attempts),
  a as (insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, duration_ms, outcome)
        select id, attempts, 'raw', 0, 'SUCCEEDED' from done where ${attemptRows})
  select count(*)::int as n from done`;

/** Claims and completes batches until a claim finds nothing; returns the events completed. */
export async function drainRaw(pool: pg.Pool, claimSql: string, completeStatement: string): Promise<number> {
  let done = 0;
  let completing: Promise<number> | null = null;
  for (;;) {
    const claimed = await pool.query<{ id: string; lease_token: string }>(claimSql);
    if (completing) done += await completing;
    if (!claimed.rowCount) return done;
    completing = pool.query<{ n: number }>(completeStatement, [claimed.rows.map((c) => c.id), claimed.rows.map((c) => c.lease_token)])
      .then((r) => r.rows[0]!.n);
  }
}
