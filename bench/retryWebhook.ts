// npm run bench:retry:webhook — webhook deliveries per second with 2 worker processes against a
// local HTTP sink that answers after 20 ms. BENCH_DATABASE_URL (admin URL), BENCH_EVENTS (5000),
// BENCH_CONCURRENCY per process (50).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';

const WORKER = fileURLToPath(new URL('../test/helpers/retryWorker.ts', import.meta.url));
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const LATENCY_MS = 20;

const name = `lazarus_benchwh_${process.pid}`;
const dbUrl = await createDatabase(adminUrl, name);
const sink = createServer((req, res) => {
  req.resume();
  req.on('end', () => setTimeout(() => res.writeHead(200).end('ok'), LATENCY_MS));
});
sink.listen(0, '127.0.0.1');
await once(sink, 'listening');
const target = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`;

try {
  await migrate(dbUrl, { logger: pino({ level: 'warn' }) });
  const pool = new pg.Pool({ connectionString: dbUrl, max: 2 });
  pool.on('error', () => {});
  await pool.query(`insert into retry_policies (event_type, target_url, allow_private_target, signing_secret) values ('order.placed', $1, true, 'bench-signing-secret-0123456789')`, [target]);
  await pool.query(`insert into dead_letters (event_type, payload) select 'order.placed', jsonb_build_object('n', g, 'pad', repeat('x', 1000)) from generate_series(1, $1::int) g`, [EVENTS]);
  const started = performance.now();
  const workers = ['w1', 'w2'].map((workerId) => spawn(process.execPath, [WORKER, JSON.stringify({
    databaseUrl: dbUrl, workerId, inProcess: false, batchSize: 100, concurrency: CONCURRENCY, leaseSeconds: 30, pollIntervalMs: 50,
  })], { stdio: ['ignore', 'ignore', 'inherit'] }));
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(`select count(*)::int as n from dead_letter_states where status = 'SUCCEEDED'`);
    if (rows[0]!.n === EVENTS) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(`${EVENTS} webhook deliveries (sink latency ${LATENCY_MS} ms, 2 processes × concurrency ${CONCURRENCY}) in ${seconds.toFixed(2)} s = ${Math.round(EVENTS / seconds)}/s (includes process start-up)`);
  for (const w of workers) w.kill('SIGTERM');
  await Promise.all(workers.map((w) => once(w, 'exit')));
  await pool.end();
} finally {
  sink.close();
  await dropDatabase(adminUrl, name);
}
