// npm run bench:live — commit-to-client latency of the live feed against a raw pg LISTEN client in
// the same run, with 1 and with 200 SSE subscribers, and ingest throughput with the NOTIFY trigger
// on vs off. The service runs as its own process; the inserts and the raw listener run on this
// process's main thread, the SSE clients in BENCH_SSE_WORKERS (2) worker threads. Each phase sends
// BENCH_RATE × BENCH_SECONDS single-row INSERTs (autocommit, BENCH_INSERT_CONNECTIONS connections),
// paced at BENCH_RATE;
// when the machine cannot keep that pace the phase runs longer and `achievedRate` says so.
// Env: BENCH_ADMIN_URL (a database we may CREATE DATABASE on), BENCH_RATE (inserts/s, 1000),
// BENCH_SECONDS (per phase, 30), BENCH_SUBSCRIBERS ("1,200"), BENCH_INGEST_SECONDS (5),
// BENCH_SERVICE_NODE_ARGS (extra node flags for the service process), BENCH_INSERT_CONNECTIONS (32:
// NOTIFY serialises commits, so under load an INSERT waits its turn and 8 connections could not
// keep 1,000/s), BENCH_INGEST_ROUNDS (3 rounds each of triggers on and off, best of each kept).
// Then the periodic-work phases: one subscriber selecting `payload`, the same inserts, while the
// service's periodic database work runs beside them (rollup compaction over BENCH_LEDGER_ROWS
// ledger rows, retention over BENCH_PURGE_ROWS finished events), once as the service runs it now
// (short batches) and once as it ran before (one statement for the whole ledger, 5,000-row purges).
// Each reports the feed's latency next to the commit-ack latency of the same INSERTs; the bar is
// feed p99 ≤ 2 × commit-ack p99.
import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { startServiceProcess } from './serviceProcess.ts';
import { purgeFinishedDeadLetters } from '../src/db/sql/purgeFinishedDeadLetters.ts';
import { compactRollups } from '../src/domain/statsRollups.ts';
import { RETENTION_BATCH } from '../src/workers/retention.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';

const adminUrl = process.env.BENCH_ADMIN_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const rate = Number(process.env.BENCH_RATE ?? 1000);
const seconds = Number(process.env.BENCH_SECONDS ?? 30);
const subscriberCounts = (process.env.BENCH_SUBSCRIBERS ?? '1,200').split(',').map(Number);
const ingestSeconds = Number(process.env.BENCH_INGEST_SECONDS ?? 5);
const ingestRounds = Number(process.env.BENCH_INGEST_ROUNDS ?? 3);
const insertConnections = Number(process.env.BENCH_INSERT_CONNECTIONS ?? 8);

const ledgerRows = Number(process.env.BENCH_LEDGER_ROWS ?? 90_000);
const purgeRows = Number(process.env.BENCH_PURGE_ROWS ?? 50_000);

const QUERY = 'subscription { deadLetterAdded(filter: { eventTypes: ["bench"] }) { deadLetter { id } } }';
const PAYLOAD_QUERY = 'subscription { deadLetterAdded(filter: { eventTypes: ["bench"] }) { deadLetter { id payload } } }';

const epochNow = () => performance.timeOrigin + performance.now();
const WORKERS = Number(process.env.BENCH_SSE_WORKERS ?? 2);

interface SseWorkers {
  /** Events each subscriber has received since the last clear. */
  counts(): Promise<number[]>;
  /** Forgets what arrived; from now on arrivals are kept for ids after `baseId`. */
  clear(baseId: number): Promise<void>;
  /** Per subscriber, arrival time by id − baseId (NaN: never arrived). */
  stop(): Promise<{ arrivals: Float64Array[]; tooSlow: number }>;
}

/** Spreads `subscribers` SSE clients over worker threads. */
async function startSseWorkers(url: string, subscribers: number, capacity: number, query = QUERY): Promise<SseWorkers> {
  const script = new URL('./sseWorker.ts', import.meta.url);
  const sizes = Array.from({ length: Math.min(WORKERS, subscribers) }, (_, i) => Math.floor(subscribers / WORKERS) + (i < subscribers % WORKERS ? 1 : 0));
  const workers = await Promise.all(
    sizes.map(async (count) => {
      const worker = new Worker(script, { workerData: { url, count, query, capacity } });
      await waitFor(worker, 'ready');
      return worker;
    }),
  );
  const ask = async <T>(type: string, reply: string): Promise<T[]> =>
    Promise.all(workers.map((w) => { const r = waitFor<T>(w, reply); w.postMessage({ type }); return r; }));
  return {
    counts: async () => (await ask<{ counts: number[] }>('counts', 'counts')).flatMap((r) => r.counts),
    clear: async (baseId) => {
      for (const w of workers) w.postMessage({ type: 'clear', baseId });
      await ask('counts', 'counts');
    },
    stop: async () => {
      const replies = await ask<{ arrivals: Float64Array[]; tooSlow: number }>('stop', 'arrivals');
      await Promise.all(workers.map((w) => w.terminate()));
      return { arrivals: replies.flatMap((r) => r.arrivals), tooSlow: replies.reduce((n, r) => n + r.tooSlow, 0) };
    },
  };
}

function waitFor<T = unknown>(worker: Worker, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string }) => {
      if (m.type !== type) return;
      worker.off('message', onMessage);
      worker.off('error', reject);
      resolve(m as T);
    };
    worker.on('message', onMessage);
    worker.on('error', reject);
  });
}

function percentiles(values: number[]) {
  const s = Float64Array.from(values).sort();
  const p = (q: number) => (s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : NaN);
  return { n: s.length, p50: +p(0.5).toFixed(2), p95: +p(0.95).toFixed(2), p99: +p(0.99).toFixed(2), max: +(s.at(-1) ?? NaN).toFixed(2) };
}

interface PhaseOptions {
  query?: string;
  /** Work to run beside the inserts, started before the first and stopped after the last. */
  background?: () => { stop(): Promise<unknown> };
}

async function latencyPhase(url: string, databaseUrl: string, subscribers: number, options: PhaseOptions = {}) {
  const sent = new Map<number, number>();
  const acks: number[] = [];
  const raw = new Map<number, number>();
  const listener = new pg.Client({ connectionString: databaseUrl });
  await listener.connect();
  listener.on('notification', (n) => {
    const at = epochNow();
    for (const id of (JSON.parse(n.payload!) as { ids: number[] }).ids) raw.set(id, at);
  });
  await listener.query('LISTEN lazarus_changes');
  const total = rate * seconds;
  const sse = await startSseWorkers(url, subscribers, total + 1_000, options.query);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: insertConnections });
  // The scratch database is dropped WITH (FORCE) at the end; an idle client's error then is expected.
  pool.on('error', () => {});
  const insert = async (): Promise<number> => {
    const client = await pool.connect();
    // Timed from when the INSERT is sent (not from waiting for a pooled connection).
    const t0 = epochNow();
    try {
      const { rows } = await client.query<{ id: string }>(`insert into dead_letters (event_type, payload) values ('bench', '{"order": {"id": 7, "lines": [1, 2, 3]}}') returning id::text`);
      const id = Number(rows[0]!.id);
      sent.set(id, t0);
      acks.push(epochNow() - t0);
      return id;
    } finally {
      client.release();
    }
  };
  // Warm up until every subscriber has seen a row, so connection set-up is not measured.
  const baseId = await insert();
  while ((await sse.counts()).some((n) => n === 0)) await new Promise((r) => setTimeout(r, 20));
  await sse.clear(baseId);
  sent.clear();
  raw.clear();
  acks.length = 0;

  const background = options.background?.();
  const started = performance.now();
  const inflight = new Set<Promise<void>>();
  for (let i = 0; i < total; i++) {
    const wait = started + (i * 1000) / rate - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const p: Promise<void> = insert().then(() => {}).finally(() => inflight.delete(p));
    inflight.add(p);
    if (inflight.size >= 2 * insertConnections) await Promise.race(inflight);
  }
  await Promise.all(inflight);
  const elapsed = (performance.now() - started) / 1000;
  const periodicStatementsMs = await background?.stop();
  const deadline = performance.now() + 15_000;
  while (performance.now() < deadline && (await sse.counts()).some((n) => n < sent.size)) await new Promise((r) => setTimeout(r, 100));

  const { arrivals: received, tooSlow } = await sse.stop();
  const rawLatencies = [...raw].filter(([id]) => sent.has(id)).map(([id, at]) => at - sent.get(id)!);
  const sseLatencies: number[] = [];
  let missed = 0;
  for (const times of received) {
    for (const [id, t0] of sent) {
      const at = times[id - baseId]!;
      if (Number.isNaN(at)) missed += 1;
      else sseLatencies.push(at - t0);
    }
  }
  await listener.end();
  await pool.end();
  return {
    subscribers, inserted: sent.size, achievedRate: Math.round(sent.size / elapsed), commitAck: percentiles(acks),
    ...(periodicStatementsMs !== undefined && { periodicStatementsMs }),
    rawListen: percentiles(rawLatencies), lazarusSse: percentiles(sseLatencies), missed, disconnectedTooSlow: tooSlow,
  };
}

/** A retention backlog of finished events and a rollup ledger of zero-sum delta rows, as hours of traffic leave them. */
async function seedPeriodicWork(databaseUrl: string) {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  await pool.query(`insert into dead_letters (event_type, status, resolved_at, next_attempt_at, payload)
                    select 'old', 'SUCCEEDED', now() - interval '40 days', null, jsonb_build_object('n', g) from generate_series(1, $1::int) g`, [purgeRows]);
  await pool.query(`insert into dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
                    select date_trunc('hour', now()) - (g % 500) * interval '1 hour', 'ledger.' || (g % 40), 'default', 'UNKNOWN', 'PENDING',
                           case when g % 2 = 0 then 1 else -1 end, 0
                      from generate_series(1, $1::int) g`, [ledgerRows]);
  await pool.end();
}

/**
 * The service's periodic database work, in a loop until stopped: `batched` as the service runs it
 * now, otherwise as it ran before (the whole ledger in one statement, 5,000-row purges).
 */
function periodicWork(databaseUrl: string, batched: boolean): () => { stop(): Promise<unknown> } {
  return () => {
    const handle = createDb(databaseUrl, { poolMax: 2, acquireTimeoutMs: 5_000, statementTimeoutMs: 60_000, applicationName: 'bench-periodic' });
    let running = true;
    const statements: number[] = [];
    const timed = async (work: () => Promise<unknown>) => {
      const t0 = performance.now();
      await work();
      statements.push(performance.now() - t0);
    };
    const loop = (async () => {
      while (running) {
        if (batched) {
          let t0 = performance.now();
          await compactRollups(handle.db, { onBatch: () => {
            statements.push(performance.now() - t0);
            t0 = performance.now();
          } });
        }
        else await timed(() => handle.db.$queryRaw`select lazarus_compact_rollups()`);
        const batch = batched ? RETENTION_BATCH : 5_000;
        for (let purged = batch; running && purged === batch;) {
          const t0 = performance.now();
          purged = (await purgeFinishedDeadLetters(handle.db, 30 * 86_400_000, batch)) ?? 0;
          statements.push(performance.now() - t0);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    return {
      async stop() {
        running = false;
        await loop;
        await handle.close();
        return percentiles(statements);
      },
    };
  };
}

async function ingestRun(databaseUrl: string, notifyOn: boolean): Promise<number> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  // The scratch database is dropped WITH (FORCE) at the end; an idle client's error then is expected.
  pool.on('error', () => {});
  await pool.query(`alter table dead_letters ${notifyOn ? 'enable' : 'disable'} trigger tg_dead_letters__notify_insert`);
  let rows = 0;
  const end = performance.now() + ingestSeconds * 1000;
  await Promise.all(
    [0, 1, 2, 3].map(async () => {
      while (performance.now() < end) {
        await pool.query(`insert into dead_letters (event_type, payload) select 'ingest', jsonb_build_object('n', g) from generate_series(1, 100) g`);
        rows += 100;
      }
    }),
  );
  await pool.query(`alter table dead_letters enable trigger tg_dead_letters__notify_insert`);
  await pool.end();
  return Math.round(rows / ingestSeconds);
}

const name = `lazarus_bench_${randomBytes(4).toString('hex')}`;
const databaseUrl = await createDatabase(adminUrl, name);
try {
  await migrate(databaseUrl);
  const service = await startServiceProcess(databaseUrl);
  const results = [];
  for (const n of subscriberCounts) {
    const r = await latencyPhase(service.url, databaseUrl, n);
    console.log(JSON.stringify(r));
    results.push(r);
  }
  for (const batched of [true, false]) {
    await seedPeriodicWork(databaseUrl);
    const r = await latencyPhase(service.url, databaseUrl, 1, { query: PAYLOAD_QUERY, background: periodicWork(databaseUrl, batched) });
    const bar = r.lazarusSse.p99 <= 2 * r.commitAck.p99;
    console.log(JSON.stringify({ periodicWork: batched ? 'short batches (now)' : 'one statement (before)', ...r, bar: `feed p99 ≤ 2 × commit-ack p99: ${bar ? 'met' : 'NOT met'}` }));
  }
  await service.stop();
  const ingest: { notifyOn: number[]; notifyOff: number[] } = { notifyOn: [], notifyOff: [] };
  for (let i = 0; i < ingestRounds; i++) {
    ingest.notifyOn.push(await ingestRun(databaseUrl, true));
    ingest.notifyOff.push(await ingestRun(databaseUrl, false));
  }
  const on = Math.max(...ingest.notifyOn);
  const off = Math.max(...ingest.notifyOff);
  console.log(JSON.stringify({ ingestRowsPerSecond: ingest, bestOn: on, bestOff: off, notifyCostPercent: +((100 * (off - on)) / off).toFixed(1) }));
} finally {
  await dropDatabase(adminUrl, name);
}
