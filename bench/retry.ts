// npm run bench:retry — drain rate of the retry engine vs a raw-SQL claim/complete loop and two
// peer job queues, same database, same run. 50,000 due events (~1 KB payload, ~2 KB stack), no-op
// in-process handler, concurrency 10, batch 100. BENCH_DATABASE_URL (an admin URL; a scratch
// database is created and dropped) defaults to postgresql://postgres@127.0.0.1:5432/postgres.
// BENCH_EVENTS, BENCH_RUNS override. BENCH_WITHOUT_SEARCH_INDEXES=1 drops the payload's GIN index
// first, to show what it costs every status change (an update that changes indexed columns is
// never HOT; the error-text indexes live on a side table that status changes never write).
//
// Every run drains the same number of jobs five times, each after a fresh seed, a VACUUM of the whole
// database and a CHECKPOINT, none of them timed:
//   lazarus          the retry loop (startRetryLoop: batch 100, concurrency 10, pool of 4), whose
//                    next claim runs alongside the last batch's completion write
//   lazarus, half fail once   the same loop; every even id fails its first attempt (HTTP 503,
//                    Retry-After 0, so it is due again at once) and succeeds on its second: a
//                    redrive into a receiver that is half down. Timed until every event succeeded.
//   raw SQL          the same writes as plain SQL, overlapped the same way on two connections: the limit
//   graphile-worker  (devDependency, pinned) schema graphile_worker, concurrency 10, pool of 11,
//                    prepared statements on, no-op task, at the settings of its published best
//                    figures (GW_SETTINGS below, with the pages they come from): localQueue.size
//                    500 with a 10 ms refetchDelay, completeJobBatchDelay and failJobBatchDelay 0
//   pg-boss          (devDependency, pinned) schema pgboss, no-op batch handler, pool of 11, the
//                    throughput options its work() docs give (PB_SETTINGS below): localConcurrency
//                    10, batchSize 100, burstWhenBatchFull, pollingIntervalSeconds 0.5 (its
//                    minimum); supervise and schedule off (no maintenance or cron timers in a drain)
// Every contestant drains at concurrency 10 with batches of 100 where it batches at all.
// Peer jobs carry the same JSON as the events (orderId, customer, 12 lines, plus the ~2 KB stack),
// are seeded in bulk (add_jobs / insert() in batches of 1,000) and timed from starting the worker
// until the peer's own table says every job is completed (polled every 100 ms once the handler has
// seen them all); the handler count and the table must both equal BENCH_EVENTS or the bench fails.
// The contestants interleave: odd runs go in the order above, even runs in reverse (A B C C B A
// A B C …), so a load spike on the shared machine lands on neighbours of both kinds, and each
// run's ratios compare drains that ran minutes apart at most.
// Prints each run, then one table: per contestant the median events/s, lazarus ÷ it, its
// PostgreSQL backend CPU per job (its connections, by application_name: utime + stime from
// /proc/<pid>/stat before and after the drain, when the server runs on this machine; the
// database's share of the work, which a shared machine's noise moves far less than events/s) and
// the WAL records per job its database wrote (bench/walCount.ts); then issue 20's bars: lazarus ÷
// graphile-worker (≥ 1.0), lazarus ÷ pg-boss (≥ 0.6), the failing phase (≥ 0.5) and WAL records
// per delivered event (≤ 20). A failure anywhere stops the workers, ends the pools, drops the
// scratch database and exits non-zero with the error.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { run as runGraphileWorker, runMigrations as migrateGraphileWorker, Logger as GraphileLogger, type Runner } from 'graphile-worker';
import { PgBoss } from 'pg-boss';
import { pino } from 'pino';
import pg from 'pg';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import type { RetryPassSummary } from '../src/workers/retry/runRetryPass.ts';
import { startRetryLoop } from '../src/workers/retry/startRetryLoop.ts';
import { BATCH, completeSql, drainRaw, narrowClaim } from './rawDrain.ts';
import { seedDueEvents } from './seedDueEvents.ts';
import { walPosition, walSince } from './walCount.ts';
import { cpuMsOf } from './triggerCost.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CONCURRENCY = 10;
const SEED_CHUNK = 1_000;
const POLL_MS = 100;
/** A peer whose handler count stops moving this long has stalled: fail instead of waiting forever. */
const STALL_MS = 60_000;
const logger = pino({ level: 'warn' });

// Each peer at its own documented best, printed with the page each setting comes from.
const GW_SETTINGS = {
  localQueue: { size: 500, refetchDelay: { durationMs: 10 } },
  completeJobBatchDelay: 0,
  failJobBatchDelay: 0,
} as const;
const GW_SOURCES = [
  'https://worker.graphile.org/docs/performance (the configuration of its "Quick stats": localQueue.size 500, batch delays 0)',
  'https://github.com/graphile/worker/blob/main/perfTest/graphile.config.js (its perfTest preset: the same plus refetchDelay.durationMs 10)',
];
const PB_SETTINGS = { localConcurrency: CONCURRENCY, batchSize: BATCH, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 } as const;
const PB_SOURCES = [
  'https://pgboss.io/api/workers (work(): localConcurrency, batchSize, burstWhenBatchFull "fetches continuously", pollingIntervalSeconds ≥ 0.5; pg-boss publishes no performance page)',
  'https://pgboss.io/api/constructor (supervise, schedule)',
];
const version = (pkg: string) =>
  (JSON.parse(readFileSync(new URL(`../node_modules/${pkg}/package.json`, import.meta.url), 'utf8')) as { version: string }).version;

// The peers' job payload: the JSON the seed below builds in SQL, plus the stack as a string.
const STACK = '    at processOrder (/app/src/consumers/orders.ts:123:45)\n'.repeat(36);
const peerPayload = (g: number) => ({
  orderId: g,
  customer: `c-${g}`,
  lines: Array.from({ length: 12 }, (_, k) => ({ sku: `SKU-${k + 1}`, qty: k + 1, note: 'x'.repeat(40) })),
  stack: STACK,
});
/** Calls `insert` with the payloads of jobs 1..EVENTS, SEED_CHUNK at a time. */
const seedInChunks = async (insert: (payloads: ReturnType<typeof peerPayload>[]) => Promise<unknown>) => {
  for (let from = 1; from <= EVENTS; from += SEED_CHUNK) {
    await insert(Array.from({ length: Math.min(SEED_CHUNK, EVENTS - from + 1) }, (_, k) => peerPayload(from + k)));
  }
};
/** Polls every POLL_MS until `settled()` (the peer's own tables) says done; the query waits until the handler has seen every job. */
const waitUntilDrained = async (label: string, handled: () => number, settled: () => Promise<boolean>) => {
  let seen = -1;
  let movedAt = performance.now();
  for (;;) {
    const h = handled();
    if (h >= EVENTS && (await settled())) return;
    if (h !== seen) [seen, movedAt] = [h, performance.now()];
    else if (performance.now() - movedAt > STALL_MS) throw new Error(`${label} stalled: ${h} of ${EVENTS} jobs handled, not drained after ${STALL_MS / 1000} s`);
    await sleep(POLL_MS);
  }
};

interface Contestant {
  label: string;
  /** Not timed. */
  seed: () => Promise<void>;
  /** Timed: returns the number of jobs drained. */
  drain: () => Promise<number>;
  /** After the timer (and on failure): stop whatever `drain` started. */
  stop?: () => Promise<void>;
  /** The application_name of the connections that drain. */
  app: string;
}

const name = `lazarus_bench_${process.pid}`;
const dbUrl = await createDatabase(adminUrl, name);
/** Run in reverse order in `finally`, also when a drain fails: stop workers, end pools. */
const cleanups: Array<() => Promise<unknown>> = [];

try {
  await migrate(dbUrl, { logger });
  if (process.env.BENCH_WITHOUT_SEARCH_INDEXES === '1') {
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    await c.query('drop index dead_letters_payload_gin');
    await c.end();
  }
  const handle = createDb(dbUrl, { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: 'lazarus-retry' });
  cleanups.push(() => handle.close());
  const pool = new pg.Pool({ connectionString: dbUrl, max: 2, application_name: 'bench-raw' });
  pool.on('error', () => {});
  cleanups.push(() => pool.end());

  const seed = () => seedDueEvents(pool, EVENTS);

  // The engine as the service runs it: the retry loop, which starts the next pass's claim once the
  // last pass's deliveries have all started (its completion write then runs alongside the claim).
  const lazarus = async (halfFailOnce: boolean) => {
    const loop = startRetryLoop({
      db: handle.db, logger, inProcessEventTypes: ['order.placed'],
      deliver: async (event) => halfFailOnce && event.id % 2n === 0n && event.attempts === 1
        ? { ok: false as const, outcome: 'FAILED' as const, errorMessage: 'HTTP 503', statusCode: 503, responseBody: null, retryAfterMs: 0 }
        : { ok: true as const, statusCode: null, responseBody: null },
      config: {
        workerId: 'bench', batchSize: BATCH, concurrency: CONCURRENCY, leaseSeconds: 30,
        pollIntervalMs: 50, shutdownTimeoutMs: 10_000,
      },
    });
    let done = 0;
    try {
      await new Promise<void>((resolve, reject) => {
        loop.events.on('passFailed', reject);
        loop.events.on('passCompleted', (s: RetryPassSummary) => {
          done += s.succeeded;
          if (s.succeeded + s.retried !== s.claimed) reject(new Error(`a pass claimed ${s.claimed} and recorded ${s.succeeded} successes, ${s.retried} retries: ${JSON.stringify(s)}`));
          else if (done >= EVENTS) resolve();
        });
      });
    } finally {
      await loop.stop();
    }
    return done;
  };

  // The limit: the same writes as plain SQL, with no engine around them (bench/rawDrain.ts).
  const raw = () => drainRaw(pool, narrowClaim('dead_letter_states', 'order.placed'), completeSql('dead_letter_states'));

  // graphile-worker: its own pool (concurrency + 1 for the LISTEN connection, as in its performance
  // docs), migrated once up front so the timer covers starting the worker pool and the drain only.
  const gwPool = new pg.Pool({ connectionString: dbUrl, max: CONCURRENCY + 1, application_name: 'bench-graphile-worker' });
  gwPool.on('error', () => {});
  gwPool.on('connect', (client) => client.on('error', () => {})); // graphile-worker checks for both
  cleanups.push(() => gwPool.end());
  const gwLogger = new GraphileLogger(() => () => {});
  const gwOptions = { pgPool: gwPool, schema: 'graphile_worker', logger: gwLogger, noHandleSignals: true } as const;
  await migrateGraphileWorker(gwOptions);
  let gwHandled = 0;
  let gwRunner: Runner | null = null;
  const graphileWorker: Contestant = {
    label: 'graphile-worker', app: 'bench-graphile-worker',
    seed: async () => {
      await gwPool.query('delete from graphile_worker._private_jobs');
      let added = 0;
      await seedInChunks(async (payloads) => {
        const r = await gwPool.query<{ n: number }>(`
          select count(*)::int as n from graphile_worker.add_jobs(
            array(select s from json_populate_recordset(null::graphile_worker.job_spec, $1::json) s))`,
        [JSON.stringify(payloads.map((payload) => ({ identifier: 'bench', payload })))]);
        added += r.rows[0]!.n;
      });
      if (added !== EVENTS) throw new Error(`graphile-worker seeded ${added} of ${EVENTS}`);
      await gwPool.query('vacuum analyze graphile_worker._private_jobs');
      gwHandled = 0;
    },
    drain: async () => {
      gwRunner = await runGraphileWorker({
        ...gwOptions, concurrency: CONCURRENCY, crontab: '',
        preset: { worker: GW_SETTINGS },
        taskList: { bench: async () => { gwHandled += 1; } },
      });
      // Completing a job deletes it: drained when the jobs table is empty. Asked on the bench's
      // own pool, so the polling counts in no contestant's CPU.
      await waitUntilDrained('graphile-worker', () => gwHandled, async () =>
        (await pool.query<{ n: number }>('select count(*)::int as n from graphile_worker._private_jobs')).rows[0]!.n === 0);
      return gwHandled;
    },
    stop: async () => {
      const runner = gwRunner;
      gwRunner = null;
      await runner?.stop();
    },
  };

  // pg-boss: one instance for all runs, started (and migrated) up front; the timer covers work().
  const QUEUE = 'bench';
  const boss = new PgBoss({
    connectionString: dbUrl, schema: 'pgboss', max: CONCURRENCY + 1, application_name: 'bench-pg-boss',
    supervise: false, schedule: false,
  });
  let bossError: unknown = null;
  boss.on('error', (error) => { bossError ??= error; });
  await boss.start();
  cleanups.push(() => boss.stop({ graceful: true, close: true, timeout: 10_000 }));
  await boss.createQueue(QUEUE);
  let pbHandled = 0;
  let pbWorking = false;
  const pgBoss: Contestant = {
    label: 'pg-boss', app: 'bench-pg-boss',
    seed: async () => {
      await boss.deleteAllJobs();
      await seedInChunks((payloads) => boss.insert(QUEUE, payloads.map((data) => ({ data }))));
      const seeded = (await pool.query<{ n: number }>('select count(*)::int as n from pgboss.job where name = $1', [QUEUE])).rows[0]!.n;
      if (seeded !== EVENTS) throw new Error(`pg-boss seeded ${seeded} of ${EVENTS}`);
      await pool.query('vacuum analyze pgboss.job');
      pbHandled = 0;
      bossError = null;
    },
    drain: async () => {
      pbWorking = true;
      await boss.work(QUEUE, PB_SETTINGS,
        async (jobs) => { pbHandled += jobs.length; });
      let completed = 0;
      await waitUntilDrained('pg-boss', () => pbHandled, async () => {
        if (bossError) throw bossError;
        const r = await pool.query<{ completed: number; total: number }>(
          `select count(*) filter (where state = 'completed')::int as completed, count(*)::int as total from pgboss.job where name = $1`, [QUEUE]);
        completed = r.rows[0]!.completed;
        return completed === r.rows[0]!.total;
      });
      if (bossError) throw bossError;
      if (pbHandled !== completed) throw new Error(`pg-boss handler saw ${pbHandled} jobs, table has ${completed} completed`);
      return completed;
    },
    stop: async () => {
      if (!pbWorking) return;
      pbWorking = false;
      await boss.offWork(QUEUE, { wait: true });
    },
  };

  const contestants: Contestant[] = [
    { label: 'lazarus', seed, drain: () => lazarus(false), app: 'lazarus-retry' },
    { label: 'lazarus, half fail once', seed, drain: () => lazarus(true), app: 'lazarus-retry' },
    { label: 'raw', seed, drain: raw, app: 'bench-raw' },
    graphileWorker,
    pgBoss,
  ];
  /** CPU milliseconds used so far by this database's backends named `app`, by pid (null: /proc cannot tell). */
  const backendCpuMs = async (app: string): Promise<Map<number, number> | null> => {
    const { rows } = await pool.query<{ pid: number }>(
      'select pid from pg_stat_activity where datname = current_database() and application_name = $1', [app]);
    const used = new Map<number, number>();
    for (const { pid } of rows) {
      const ms = await cpuMsOf(pid);
      if (ms === null) return null;
      used.set(pid, ms);
    }
    return used;
  };
  cleanups.push(async () => { for (const c of contestants) await c.stop?.(); });
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const byLabel = <T>(make: () => T) => Object.fromEntries(contestants.map((c) => [c.label, make()])) as Record<string, T>;
  const results = byLabel<number[]>(() => []);
  const cpuPerJob = byLabel<number[]>(() => []);
  /** WAL records this database wrote during each drain, per job drained (bench/walCount.ts). */
  const walPerJob = byLabel<number[]>(() => []);
  const width = Math.max(...contestants.map((c) => c.label.length));

  console.log(`graphile-worker ${version('graphile-worker')}: concurrency ${CONCURRENCY}, pool of ${CONCURRENCY + 1}, preset.worker ${JSON.stringify(GW_SETTINGS)}`);
  for (const source of GW_SOURCES) console.log(`  from ${source}`);
  console.log(`pg-boss ${version('pg-boss')}: pool of ${CONCURRENCY + 1}, supervise and schedule off, work() ${JSON.stringify(PB_SETTINGS)}`);
  for (const source of PB_SOURCES) console.log(`  from ${source}`);
  console.log(`lazarus: startRetryLoop batchSize ${BATCH}, concurrency ${CONCURRENCY}, pool of 4; raw SQL: bench/rawDrain.ts on a pool of 2\n`);

  for (let run = 1; run <= RUNS; run++) {
    // A B C, then C B A: a load spike lands on both sides of a comparison.
    const order = run % 2 === 1 ? contestants : [...contestants].reverse();
    for (const { label, seed: seedFor, drain, stop, app } of order) {
      await seedFor();
      // Untimed: every drain starts from a vacuumed database and a fresh checkpoint, so none drains
      // while autovacuum cleans up after the one before it (a peer's 50,000 finished or deleted
      // jobs) or a checkpoint that its WAL brought on lands in it.
      await pool.query('vacuum');
      await pool.query('checkpoint');
      const walFrom = await walPosition(pool);
      const cpuBefore = await backendCpuMs(app);
      const started = performance.now();
      let n: number;
      let seconds: number;
      try {
        n = await drain();
        seconds = (performance.now() - started) / 1000;
        // Backends that opened during the drain count whole; the query itself runs on bench-raw.
        const cpuAfter = cpuBefore && await backendCpuMs(app);
        if (cpuBefore && cpuAfter) {
          let ms = 0;
          for (const [pid, used] of cpuAfter) ms += used - (cpuBefore.get(pid) ?? 0);
          cpuPerJob[label]!.push((ms * 1000) / n);
        }
      } finally {
        await stop?.();
      }
      if (n !== EVENTS) throw new Error(`${label} drained ${n} of ${EVENTS}`);
      // After stop(): a peer's last batched completions are written by then.
      walPerJob[label]!.push((await walSince(pool, walFrom)).records / n);
      results[label]!.push(n / seconds);
      console.log(`run ${run} ${label.padEnd(width)} ${n} events in ${seconds.toFixed(2)} s = ${Math.round(n / seconds)} events/s`);
    }
  }

  const lz = median(results.lazarus!);
  const rows: Array<[string, string]> = [
    ['lazarus', 'lazarus'],
    ['lazarus, half fail once', 'lazarus, half fail once'],
    ['raw SQL (the limit)', 'raw'],
    [`graphile-worker ${version('graphile-worker')}`, 'graphile-worker'],
    [`pg-boss ${version('pg-boss')}`, 'pg-boss'],
  ];
  const perRunRatio = (key: string) => results.lazarus!.map((x, i) => (x / results[key]![i]!).toFixed(2)).join(', ');
  const table = [
    ['contestant', 'events/s', 'lazarus ÷ it', 'DB CPU µs/event', 'WAL rec/event', 'events/s per run', 'lazarus ÷ it per run'],
    ...rows.map(([l, key]) => {
      const xs = results[key]!;
      return [
        l,
        String(Math.round(median(xs))),
        key === 'lazarus' ? '1' : (lz / median(xs)).toFixed(2),
        cpuPerJob[key]!.length === xs.length ? median(cpuPerJob[key]!).toFixed(0) : '—',
        median(walPerJob[key]!).toFixed(1),
        xs.map((x) => Math.round(x)).join(', '),
        key === 'lazarus' ? '' : perRunRatio(key),
      ];
    }),
  ];
  const widths = table[0]!.map((_, c) => Math.max(...table.map((r) => r[c]!.length)));
  console.log(`\n${EVENTS} events, median of ${RUNS} run(s), contestants interleaved (odd runs in order, even runs reversed):`);
  const line = (r: string[]) => console.log(`| ${r.map((cell, c) => (c === 0 || c >= 5 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join(' | ')} |`);
  line(table[0]!);
  console.log(`|${widths.map((w, c) => (c === 0 || c >= 5 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const r of table.slice(1)) line(r);
  console.log('DB CPU: user + system time of the contestant\'s own PostgreSQL backends (by application_name, /proc/<pid>/stat), ' +
    'before and after the drain, ÷ events; "—" where /proc cannot see the server. ' +
    'WAL: records in this database\'s WAL over the drain (pg_walinspect), ÷ events; the "half fail once" row delivers 1.5 times per event.');
  // Issue 20's bars, of the medians (each run's own ratio is in the table).
  const verdict = (ratio: number, bar: number, atMost = false) =>
    `${ratio.toFixed(2)} (bar ${atMost ? '≤' : '≥'} ${bar}: ${(atMost ? ratio <= bar : ratio >= bar) ? 'met' : 'NOT met'})`;
  console.log(`\nlazarus ÷ graphile-worker: ${verdict(lz / median(results['graphile-worker']!), 1)}`);
  console.log(`lazarus ÷ pg-boss: ${verdict(lz / median(results['pg-boss']!), 0.6)}`);
  console.log(`half fail once ÷ all succeed: ${verdict(median(results['lazarus, half fail once']!) / lz, 0.5)}`);
  console.log(`WAL records per delivered event, lazarus: ${verdict(median(walPerJob.lazarus!), 20, true)}`);
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  for (const cleanup of cleanups.reverse()) {
    await cleanup().catch((error: unknown) => { console.error('bench cleanup failed:', error); process.exitCode = 1; });
  }
  await dropDatabase(adminUrl, name);
}
