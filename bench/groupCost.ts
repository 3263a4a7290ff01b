// npm run bench:groups — what the error-group triggers (migration 20261125100000_error_groups) cost
// writers, measured A/B in one run, the same way as bench:rollups (bench/rollupCost.ts): 500-row
// multi-row INSERTs (≈ 3 KB rows, like bench:ingest), one-row INSERTs, full-table status UPDATEs
// and a DELETE, with the group triggers enabled and disabled alternately (ALTER TABLE … DISABLE
// TRIGGER between timed statements), one connection, one database. Every other trigger (stamp,
// NOTIFY, rollups, RECORDED, error texts) stays on in both modes: "off" is main without groups.
// Rows fall into 4 groups (one per event type) unless GROUP_COUNT=n, which spreads them over n
// fingerprints. One connection measures the work, not waiting: writers to one group queue on its row.
// BENCH_DATABASE_URL (or TEST_DATABASE_URL) names an admin database; a scratch database is created
// and dropped. EVENTS (default 20,000), SINGLES (default 2,000) and ROUNDS (default 3) override sizes.
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import pg from 'pg';
import { pino } from 'pino';
import { migrate } from '../src/db/migrate.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.EVENTS ?? 20_000);
const SINGLES = Number(process.env.SINGLES ?? 2_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const BATCH = 500;
const GROUPS = process.env.GROUP_COUNT ? Number(process.env.GROUP_COUNT) : null;
const TRIGGERS = ['tg_dead_letters__error_groups_insert', 'tg_dead_letters__error_groups_update', 'tg_dead_letters__error_groups_delete'];

const name = `lazarus_bench_${randomBytes(4).toString('hex')}`;
const url = new URL(adminUrl);
url.pathname = `/${name}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`create database "${name}"`);
const client = new pg.Client({ connectionString: url.toString() });
client.on('error', () => {});
try {
  await migrate(url.toString(), { logger: pino({ level: 'silent' }) });
  await client.connect();
  const filler = 'x'.repeat(2_600);
  const kinds = ['order.placed', 'order.shipped', 'payment.captured', 'user.signup'];
  const insertBatch = async (start: number, n: number) => {
    const values: unknown[] = [];
    const tuples: string[] = [];
    for (let k = 0; k < n; k++) {
      const i = start + k;
      const b = values.length;
      values.push(kinds[i % 4], JSON.stringify({ orderId: i, note: filler }), `HTTP 503 from inventory-service (request ${i})`, GROUPS ? `group-${i % GROUPS}` : null);
      tuples.push(`($${b + 1}, 'orders', 'checkout', $${b + 2}::jsonb, '{}'::jsonb, 'DOWNSTREAM_API', $${b + 3}, $${b + 4})`);
    }
    await client.query(`insert into dead_letters (event_type, queue, source, payload, headers, error_kind, error_message, fingerprint) values ${tuples.join(',')}`, values);
  };
  const timed = async (fn: () => Promise<unknown>) => {
    const start = performance.now();
    await fn();
    return performance.now() - start;
  };
  const setTriggers = async (mode: 'on' | 'off') => {
    for (const trigger of TRIGGERS) await client.query(`alter table dead_letters ${mode === 'on' ? 'enable' : 'disable'} trigger ${trigger}`);
  };
  // Load on this machine swings by 5-10x within seconds, so modes alternate at a fine grain (every
  // batch, every block of single inserts, every bulk update) and the totals per mode are compared.
  const totals = { batchInsertMs: { on: 0, off: 0 }, singleInsertMs: { on: 0, off: 0 }, bulkUpdateMs: { on: 0, off: 0 }, deleteMs: { on: 0, off: 0 } };
  const order = (i: number) => (i % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const));
  await client.query('truncate dead_letters, dead_letter_actions, delivery_attempts, redrives, redrive_items');
  const groupCount = async () => (await client.query('select count(*)::int as n from error_groups')).rows[0].n as number;
  let next = 0;
  for (let i = 0; i < EVENTS / BATCH / 2; i++) {
    for (const mode of order(i)) {
      await setTriggers(mode);
      totals.batchInsertMs[mode] += await timed(() => insertBatch(next, BATCH));
      next += BATCH;
    }
  }
  for (let i = 0; i < SINGLES / 50 / 2; i++) {
    for (const mode of order(i)) {
      await setTriggers(mode);
      totals.singleInsertMs[mode] += await timed(async () => {
        for (let k = 0; k < 50; k++) await insertBatch(next++, 1);
      });
    }
  }
  await client.query('vacuum analyze dead_letters');
  let flip = 0;
  for (let i = 0; i < ROUNDS; i++) {
    for (const mode of order(i)) {
      await setTriggers(mode);
      const status = flip++ % 2 === 0 ? 'EXHAUSTED' : 'PENDING';
      totals.bulkUpdateMs[mode] += await timed(() => client.query(`update dead_letters set status = $1::"DeadLetterStatus"`, [status]));
    }
  }
  for (const mode of order(0)) {
    await setTriggers(mode);
    totals.deleteMs[mode] += await timed(() => client.query(`delete from dead_letters where id % 2 = $1`, [mode === 'on' ? 0 : 1]));
  }
  await setTriggers('on');
  const rows = (await client.query('select count(*)::int as n from dead_letters')).rows[0].n;
  const groups = await groupCount();
  const summary = Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, { triggersOn: Math.round(v.on), triggersOff: Math.round(v.off), onOverOff: Number((v.on / v.off).toFixed(2)) }]));
  console.log(JSON.stringify({
    batchInserts: `${EVENTS} rows in ${BATCH}-row statements, half each mode`, singleInserts: `${SINGLES} one-row statements, half each mode`,
    bulkUpdates: `${ROUNDS} full-table status updates per mode over ${EVENTS + SINGLES} rows`, deletes: `half of the rows per mode`, rowsLeft: rows, groups,
    loadAverage1m: Number(loadavg()[0]!.toFixed(2)), summary,
  }, null, 2));
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await client.end().catch(() => {});
  await admin.query(`drop database if exists "${name}" with (force)`);
  await admin.end();
}
