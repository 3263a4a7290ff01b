// npm run bench:retry:blocked-key — what a blocked ordering key costs every claim (issue #6, per-key
// ordering). An ordered type has 300 keys with one due event each. One more key's head is
// EXHAUSTED, and events of that key wait behind it, due before all the others: the claim's scan in
// due order meets every one of them before it reaches a deliverable event. The bench times
// claimDueDeadLetters (batch 100, its leases released after each claim, untimed) with 0, a tenth
// of, and all BENCH_BEHIND (default 50,000) waiting events, and prints each median next to the
// claim with none waiting. BENCH_DATABASE_URL (an admin URL; a scratch database is created and
// dropped), BENCH_CLAIMS (claims per level, default 30).
import { randomBytes } from 'node:crypto';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { claimDueDeadLetters } from '../src/db/sql/claimDueDeadLetters.ts';
import { releaseLeases } from '../src/db/sql/releaseLeases.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const BEHIND = Number(process.env.BENCH_BEHIND ?? 50_000);
const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 30);
const name = `lazarus_blocked_${randomBytes(4).toString('hex')}`;
const url = await createDatabase(adminUrl, name);
await migrate(url);
const handle = createDb(url, { poolMax: 2, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: 'lazarus-bench' });
const { pool, db } = handle;

/** Adds waiting events number `from`..`to` behind the blocked head. */
const addWaiting = (from: number, to: number) => pool.query(`
  insert into dead_letters (event_type, ordering_key, ordering_seq, next_attempt_at, created_at)
  select 'order.placed', 'cust-blocked', g, now() - interval '1 hour' + g * interval '1 ms', now() - interval '1 hour'
    from generate_series($1::int, $2::int) g`, [from, to]);

/** Median claim time in ms; every claim must take a full batch of the deliverable heads. */
async function timeClaims(): Promise<number> {
  await pool.query('vacuum analyze dead_letters');
  const times: number[] = [];
  for (let i = 0; i < CLAIMS + 3; i++) {
    const started = performance.now();
    const claimed = await claimDueDeadLetters(db, { limit: 100, workerId: 'bench', leaseSeconds: 30, inProcessEventTypes: [] });
    const ms = performance.now() - started;
    if (claimed.length !== 100 || claimed.some((c) => c.orderingKey === 'cust-blocked')) throw new Error(`claim ${i} took ${claimed.length} events or a waiting one`);
    await releaseLeases(db, claimed);
    if (i >= 3) times.push(ms); // the first three warm the caches and the prepared statement
  }
  return times.toSorted((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

try {
  await pool.query(`insert into retry_policies (event_type, ordered, target_url) values ('order.placed', true, 'https://example.com/hook')`);
  await pool.query(`
    insert into dead_letters (event_type, ordering_key, ordering_seq, status, attempts, next_attempt_at, created_at)
    values ('order.placed', 'cust-blocked', 0, 'EXHAUSTED', 10, null, now() - interval '2 hours')`);
  await pool.query(`
    insert into dead_letters (event_type, ordering_key, ordering_seq, next_attempt_at)
    select 'order.placed', 'cust-' || g, 1, now() - interval '1 minute' from generate_series(1, 300) g`);
  const rows: Array<[number, number]> = [[0, await timeClaims()]];
  await addWaiting(1, BEHIND / 10);
  rows.push([BEHIND / 10, await timeClaims()]);
  await addWaiting(BEHIND / 10 + 1, BEHIND);
  rows.push([BEHIND, await timeClaims()]);
  console.log(`\nClaims of 100 from 300 deliverable heads, median of ${CLAIMS}\n`);
  console.log('| events waiting behind the blocked head | claim ms | × none waiting |');
  console.log('| ---: | ---: | ---: |');
  for (const [waiting, ms] of rows) console.log(`| ${waiting.toLocaleString('en')} | ${ms.toFixed(1)} | ${(ms / rows[0]![1]).toFixed(1)} |`);
} finally {
  await handle.close();
  await dropDatabase(adminUrl, name);
}
