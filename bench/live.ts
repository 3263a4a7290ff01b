// npm run bench:live — commit-to-client latency of the live feed against a raw pg LISTEN client in
// the same run, with 1 and with 200 SSE subscribers, and ingest throughput with the NOTIFY trigger
// on vs off. The service runs as its own process; the inserts and the raw listener run on this
// process's main thread, the SSE clients in BENCH_SSE_WORKERS (2) worker threads. Each phase sends
// BENCH_RATE × BENCH_SECONDS single-row INSERTs (autocommit, BENCH_INSERT_CONNECTIONS connections),
// paced at BENCH_RATE;
// when the machine cannot keep that pace the phase runs longer and `achievedRate` says so.
// Env: BENCH_ADMIN_URL (a database we may CREATE DATABASE on), BENCH_RATE (inserts/s, 1000),
// BENCH_SECONDS (per phase, 30), BENCH_SUBSCRIBERS ("1,200"; "" skips these phases), BENCH_INGEST_SECONDS (5),
// BENCH_SERVICE_NODE_ARGS (extra node flags for the service process), BENCH_INSERT_CONNECTIONS (8;
// 32 were tried while the SSE clients still took the service's CPU, and went back to 8 in a7ea3e0),
// BENCH_INGEST_ROUNDS (3 rounds each of triggers on and off, best of each kept; 0 skips them).
// Then the periodic-work phases (bench/livePeriodic.ts): one subscriber selecting `payload`, the
// same inserts, while the service's periodic jobs run beside them from this process (rollup and
// delivery-rollup compaction, error-group folding, alert evaluation, retention), over
// BENCH_EVENTS (0) events bulk-loaded before the service starts (60–90 days old, so the 60% that
// are finished are all due for retention; the service then runs with RETRY_ENABLED=false, or it
// would drain the 40% that are PENDING and due), plus BENCH_LEDGER_ROWS (90,000) rollup ledger
// rows and BENCH_PURGE_ROWS (50,000) finished events added before each phase.
// BENCH_PERIODIC ("now,before") lists the phases: `now` runs the jobs as the service runs them,
// `before` as they ran before short batches (one statement for the whole ledger, 5,000-row purges);
// BENCH_PERIODIC_RUNS (1) repeats the list. A sampler reads pg_stat_activity every 20 ms and
// reports, per application_name, the longest transaction seen holding an xid (`heldTransactions`).
// Each phase reports the feed's latency next to the raw LISTEN and commit-ack latency of the same
// INSERTs, and apart for the rows whose transaction sent a hint and those that did not (coalesced
// hints: a raw listener hears only the first); the bars are feed p99 ≤ 2 × raw LISTEN p99 and
// ≤ 2 × commit-ack p99 (issue 36). Purges, compaction and inserts touch the same rows in different
// orders, so PostgreSQL may abort one side of a deadlock (40P01): that statement is retried and
// counted (`deadlocks`), as the service's loops would on their next tick. Anything else fails the
// bench: it stops the service and the SSE workers, drops the scratch database and exits non-zero.
import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import { percentiles, periodicWork, retryingDeadlocks, sampleHeldTransactions, seedEvents, seedLedgers, type Background } from './livePeriodic.ts';
import { startServiceProcess } from './serviceProcess.ts';

const adminUrl = process.env.BENCH_ADMIN_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const rate = Number(process.env.BENCH_RATE ?? 1000);
const seconds = Number(process.env.BENCH_SECONDS ?? 30);
const subscriberCounts = (process.env.BENCH_SUBSCRIBERS ?? '1,200').split(',').filter(Boolean).map(Number);
const ingestSeconds = Number(process.env.BENCH_INGEST_SECONDS ?? 5);
const ingestRounds = Number(process.env.BENCH_INGEST_ROUNDS ?? 3);
const insertConnections = Number(process.env.BENCH_INSERT_CONNECTIONS ?? 8);

const ledgerRows = Number(process.env.BENCH_LEDGER_ROWS ?? 90_000);
const purgeRows = Number(process.env.BENCH_PURGE_ROWS ?? 50_000);
const events = Number(process.env.BENCH_EVENTS ?? 0);
const periodicPhases = (process.env.BENCH_PERIODIC ?? 'now,before').split(',').filter(Boolean);
const periodicRuns = Number(process.env.BENCH_PERIODIC_RUNS ?? 1);

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
  /** Ends the threads without asking for their arrivals (after a failure). */
  terminate(): Promise<void>;
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
    terminate: async () => { await Promise.all(workers.map((w) => w.terminate())); },
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

interface PhaseOptions {
  query?: string;
  /** Work to run beside the inserts, started before the first and stopped after the last. */
  background?: () => Background;
}

async function latencyPhase(url: string, databaseUrl: string, subscribers: number, options: PhaseOptions = {}) {
  const sent = new Map<number, number>();
  const acks: number[] = [];
  const raw = new Map<number, number>();
  const deadlocks = { n: 0 };
  const total = rate * seconds;
  const listener = new pg.Client({ connectionString: databaseUrl });
  listener.on('error', () => {});
  const pool = new pg.Pool({ connectionString: databaseUrl, max: insertConnections, application_name: 'bench-insert' });
  // The scratch database is dropped WITH (FORCE) at the end; an idle client's error then is expected.
  pool.on('error', () => {});
  let sse: SseWorkers | null = null;
  let background: Background | undefined;
  let sampler: Background | undefined;
  try {
    await listener.connect();
    listener.on('notification', (n) => {
      const at = epochNow();
      for (const id of (JSON.parse(n.payload!) as { ids: number[] }).ids) raw.set(id, at);
    });
    await listener.query('LISTEN lazarus_changes');
    sse = await startSseWorkers(url, subscribers, total + 1_000, options.query);
    const insert = async (): Promise<number> => {
      const client = await pool.connect();
      // Timed from when the INSERT is sent (not from waiting for a pooled connection); a retry
      // after a deadlock counts in its ack.
      const t0 = epochNow();
      try {
        const { rows } = await retryingDeadlocks(deadlocks, () => client.query<{ id: string }>(
          `insert into dead_letters (event_type, payload) values ('bench', '{"order": {"id": 7, "lines": [1, 2, 3]}}') returning id::text`));
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

    if (options.background) {
      sampler = sampleHeldTransactions(databaseUrl);
      background = options.background();
    }
    const started = performance.now();
    const inflight = new Set<Promise<void>>();
    try {
      for (let i = 0; i < total; i++) {
        const wait = started + (i * 1000) / rate - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        const p: Promise<void> = insert().then(() => {}).finally(() => inflight.delete(p));
        inflight.add(p);
        if (inflight.size >= 2 * insertConnections) await Promise.race(inflight);
      }
    } finally {
      // Every insert settles before the pool ends, also when one failed (none is left unawaited).
      const settled = await Promise.allSettled(inflight);
      const failed = settled.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    }
    const elapsed = (performance.now() - started) / 1000;
    const periodic = background;
    background = undefined;
    const periodicStatementsMs = await periodic?.stop();
    const sampling = sampler;
    sampler = undefined;
    const heldTransactions = await sampling?.stop();
    const deadline = performance.now() + 15_000;
    while (performance.now() < deadline && (await sse.counts()).some((n) => n < sent.size)) await new Promise((r) => setTimeout(r, 100));

    const { arrivals: received, tooSlow } = await sse.stop();
    sse = null;
    const rawLatencies = [...raw].filter(([id]) => sent.has(id)).map(([id, at]) => at - sent.get(id)!);
    const sseLatencies: number[] = [];
    // The rows whose transaction sent no hint of its own (another held the hint turn: live-feed.md,
    // "Coalesced hints"), apart: they are read at another writer's hint or in the trailing reads.
    const unhintedLatencies: number[] = [];
    const hintedLatencies: number[] = [];
    let missed = 0;
    for (const times of received) {
      for (const [id, t0] of sent) {
        const at = times[id - baseId]!;
        if (Number.isNaN(at)) missed += 1;
        else {
          sseLatencies.push(at - t0);
          (raw.has(id) ? hintedLatencies : unhintedLatencies).push(at - t0);
        }
      }
    }
    const commitAck = percentiles(acks);
    const lazarusSse = percentiles(sseLatencies);
    return {
      subscribers, inserted: sent.size, achievedRate: Math.round(sent.size / elapsed), commitAck,
      ...(periodicStatementsMs !== undefined && { periodicStatementsMs, heldTransactions }),
      rawListen: percentiles(rawLatencies), lazarusSse,
      lazarusSseHinted: percentiles(hintedLatencies), lazarusSseUnhinted: percentiles(unhintedLatencies),
      sseP99OverCommitAckP99: +(lazarusSse.p99 / commitAck.p99).toFixed(2), missed, disconnectedTooSlow: tooSlow,
      insertDeadlocks: deadlocks.n,
    };
  } finally {
    await background?.stop().catch(() => {});
    await sampler?.stop().catch(() => {});
    await sse?.terminate();
    await listener.end().catch(() => {});
    await pool.end();
  }
}

async function ingestRun(databaseUrl: string, notifyOn: boolean): Promise<number> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  // The scratch database is dropped WITH (FORCE) at the end; an idle client's error then is expected.
  pool.on('error', () => {});
  try {
    await pool.query(`alter table dead_letter_states ${notifyOn ? 'enable' : 'disable'} trigger tg_dead_letter_states__notify_insert`);
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
    await pool.query(`alter table dead_letter_states enable trigger tg_dead_letter_states__notify_insert`);
    return Math.round(rows / ingestSeconds);
  } finally {
    await pool.end();
  }
}

const name = `lazarus_bench_${randomBytes(4).toString('hex')}`;
const databaseUrl = await createDatabase(adminUrl, name);
let service: { url: string; stop: () => Promise<void> } | null = null;
try {
  await migrate(databaseUrl);
  if (events > 0) {
    const t0 = performance.now();
    await seedEvents(databaseUrl, events, (line) => process.stderr.write(`${line}\n`));
    console.log(JSON.stringify({ seededEvents: events, seedSeconds: Math.round((performance.now() - t0) / 1000) }));
  }
  service = await startServiceProcess(databaseUrl, events > 0 ? { RETRY_ENABLED: 'false' } : {});
  for (const n of subscriberCounts) console.log(JSON.stringify(await latencyPhase(service.url, databaseUrl, n)));
  for (let run = 1; run <= periodicRuns; run++) {
    for (const phase of periodicPhases) {
      await seedLedgers(databaseUrl, purgeRows, ledgerRows);
      const r = await latencyPhase(service.url, databaseUrl, 1, { query: PAYLOAD_QUERY, background: periodicWork(databaseUrl, phase !== 'before') });
      const ratio = +(r.lazarusSse.p99 / r.rawListen.p99).toFixed(2);
      console.log(JSON.stringify({
        run, events, periodicWork: phase === 'before' ? 'one statement (before)' : 'short batches (now)', ...r,
        sseP99OverRawListenP99: ratio, bar: `feed p99 ≤ 2 × raw LISTEN p99: ${ratio <= 2 ? 'met' : 'NOT met'}`,
      }));
    }
  }
  const stopping = service;
  service = null;
  await stopping.stop();
  const ingest: { notifyOn: number[]; notifyOff: number[] } = { notifyOn: [], notifyOff: [] };
  for (let i = 0; i < ingestRounds; i++) {
    ingest.notifyOn.push(await ingestRun(databaseUrl, true));
    ingest.notifyOff.push(await ingestRun(databaseUrl, false));
  }
  if (ingestRounds > 0) {
    const on = Math.max(...ingest.notifyOn);
    const off = Math.max(...ingest.notifyOff);
    console.log(JSON.stringify({ ingestRowsPerSecond: ingest, bestOn: on, bestOff: off, notifyCostPercent: +((100 * (off - on)) / off).toFixed(1) }));
  }
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await service?.stop();
  await dropDatabase(adminUrl, name);
}
