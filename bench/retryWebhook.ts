// npm run bench:retry:webhook — webhook deliveries per second with 2 worker processes against a
// local HTTP sink that answers after 20 ms. BENCH_DATABASE_URL (admin URL), BENCH_EVENTS (5000),
// BENCH_CONCURRENCY per process (50). A worker that exits early or a drain that stalls fails the
// bench; either way the workers are stopped, the sink closed and the database dropped.
import { spawn, type ChildProcess } from 'node:child_process';
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

/** A worker whose deliveries stop moving this long has stalled: fail instead of waiting forever. */
const STALL_MS = 60_000;

const name = `lazarus_benchwh_${process.pid}`;
const dbUrl = await createDatabase(adminUrl, name);
const sink = createServer((req, res) => {
  req.resume();
  req.on('end', () => setTimeout(() => res.writeHead(200).end('ok'), LATENCY_MS));
});
const pool = new pg.Pool({ connectionString: dbUrl, max: 2 });
pool.on('error', () => {});
const workers: ChildProcess[] = [];

try {
  sink.listen(0, '127.0.0.1');
  await once(sink, 'listening');
  const target = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`;
  await migrate(dbUrl, { logger: pino({ level: 'warn' }) });
  await pool.query(`insert into retry_policies (event_type, target_url, allow_private_target, signing_secret) values ('order.placed', $1, true, 'bench-signing-secret-0123456789')`, [target]);
  await pool.query(`insert into dead_letters (event_type, payload) select 'order.placed', jsonb_build_object('n', g, 'pad', repeat('x', 1000)) from generate_series(1, $1::int) g`, [EVENTS]);
  const started = performance.now();
  let exited: string | null = null;
  for (const workerId of ['w1', 'w2']) {
    const worker = spawn(process.execPath, [WORKER, JSON.stringify({
      databaseUrl: dbUrl, workerId, inProcess: false, batchSize: 100, concurrency: CONCURRENCY, leaseSeconds: 30, pollIntervalMs: 50,
    })], { stdio: ['ignore', 'ignore', 'inherit'] });
    worker.on('exit', (code, signal) => { exited ??= `worker ${workerId} exited (${signal ?? code}) before the drain ended`; });
    workers.push(worker);
  }
  let seen = -1;
  let movedAt = performance.now();
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(`select count(*)::int as n from dead_letter_states where status = 'SUCCEEDED'`);
    const n = rows[0]!.n;
    if (n === EVENTS) break;
    if (exited) throw new Error(exited);
    if (n !== seen) [seen, movedAt] = [n, performance.now()];
    else if (performance.now() - movedAt > STALL_MS) throw new Error(`stalled: ${n} of ${EVENTS} delivered, none for ${STALL_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(`${EVENTS} webhook deliveries (sink latency ${LATENCY_MS} ms, 2 processes × concurrency ${CONCURRENCY}) in ${seconds.toFixed(2)} s = ${Math.round(EVENTS / seconds)}/s (includes process start-up)`);
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  // SIGTERM lets a worker finish its pass and close its pool; one that already exited is left be.
  const running = workers.filter((w) => w.exitCode === null && w.signalCode === null);
  for (const w of running) w.kill('SIGTERM');
  await Promise.all(running.map((w) => once(w, 'exit')));
  await pool.end();
  sink.closeAllConnections();
  sink.close();
  await dropDatabase(adminUrl, name);
}
