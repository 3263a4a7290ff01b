// What the broker benches (bench/brokerAmqp.ts, brokerNats.ts, brokerIngest.ts) share: a RabbitMQ
// vhost of the bench's own, the interleaved runs (A B, then B A, …) with the load average printed
// beside each, and the markdown table with the bar. Every bench undoes what it set up in reverse
// order, also when a run fails (`cleanups`), and exits non-zero on failure.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { DEFAULT_RETRY_BATCH_SIZE, DEFAULT_RETRY_CONCURRENCY, DEFAULT_RETRY_LEASE_SECONDS } from '../src/config.ts';
import { createDb, type Db, type DbHandle } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import type { Deliver } from '../src/workers/retry/delivery.ts';
import type { RetryPassSummary } from '../src/workers/retry/runRetryPass.ts';
import { startRetryLoop } from '../src/workers/retry/startRetryLoop.ts';
import { seedDueEvents } from './seedDueEvents.ts';
import { cpuMsOf } from './triggerCost.ts';

const run = promisify(execFile);

export const RABBITMQ_HOST = process.env.RABBITMQ_HOST ?? '127.0.0.1:5672';

/** `rabbitmqctl add_vhost` with guest's permissions; `drop` deletes it with everything in it. */
export async function createBenchVhost(): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `lazarus_bench_${randomBytes(4).toString('hex')}`;
  const ctl = (...args: string[]) => run('rabbitmqctl', ['-q', ...args], { timeout: 60_000 });
  await ctl('add_vhost', name);
  try {
    await ctl('set_permissions', '-p', name, 'guest', '.*', '.*', '.*');
  } catch (error) {
    await ctl('delete_vhost', name).catch(() => {});
    throw error;
  }
  return { name, url: `amqp://guest:guest@${RABBITMQ_HOST}/${name}`, drop: async () => void (await ctl('delete_vhost', name)) };
}

export const loadAverage = () => loadavg().map((x) => x.toFixed(2)).join(' ');

export interface Contestant {
  label: string;
  /** Untimed: fill the source, empty the sink. */
  prepare: () => Promise<void>;
  /** Timed: returns how many it moved. */
  run: () => Promise<number>;
  /** Untimed: check the sink holds exactly what was moved; throws otherwise. */
  verify: (moved: number) => Promise<void>;
  /** Read after `run`: milliseconds of it not to count (a start-up measured apart). */
  untimedMs?: () => number;
  /** CPU ms used so far by the contestant's PostgreSQL backends (null: /proc cannot see them), read before and after `run`. */
  databaseCpuMs?: () => Promise<number | null>;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * The two reference rows of a redrive bench: the same redrive with claiming ahead switched off
 * (BEFORE_PIPELINE), which shows what it bought, and the loop's own ceiling, a drain whose
 * delivery does nothing. `reset` empties the broker side; `verify` checks what reached it.
 */
export function loopReferenceContestants(p: {
  db: Db; pool: pg.Pool; deliver: Deliver; events: number; reset: () => Promise<unknown>; verify: (moved: number) => Promise<void>;
}): Contestant[] {
  return [{
    label: 'lazarus as before (claim ahead off)',
    prepare: async () => {
      await seedDueEvents(p.pool, p.events);
      await p.reset();
    },
    run: () => redriveThroughLoop(p.db, p.deliver, p.events, BEFORE_PIPELINE),
    databaseCpuMs: () => databaseCpuMs(p.pool, 'lazarus-retry'),
    verify: async (moved) => {
      await p.verify(moved);
      await assertAllSucceeded(p.pool, p.events);
    },
  }, {
    label: 'lazarus, no-op delivery (the loop alone)',
    prepare: async () => {
      await seedDueEvents(p.pool, p.events);
      await p.pool.query('checkpoint');
    },
    run: () => redriveThroughLoop(p.db, async () => ({ ok: true, statusCode: null, responseBody: null }), p.events),
    databaseCpuMs: () => databaseCpuMs(p.pool, 'lazarus-retry'),
    verify: async () => {},
  }];
}

/**
 * Runs `lazarus`, `raw` and any `others` (shown, no bar) `runs` times each, in order in odd runs and
 * reversed in even ones, printing each run with the load average; then the table of medians and the
 * bar (lazarus ÷ raw ≥ `bar`).
 */
export async function runInterleaved(p: {
  title: string; events: number; runs: number; bar: number; lazarus: Contestant; raw: Contestant; others?: Contestant[];
  /** CPU ms used so far by the broker's server process, read around every contestant's run (null: not on this machine). */
  brokerCpuMs?: () => Promise<number | null>;
}): Promise<void> {
  const contestants = [p.lazarus, p.raw, ...(p.others ?? [])];
  const rates = new Map(contestants.map((c) => [c.label, [] as number[]]));
  const cpus = new Map(contestants.map((c) => [c.label, [] as number[]]));
  const brokerCpus = new Map(contestants.map((c) => [c.label, [] as number[]]));
  const loads: string[] = [];
  const width = Math.max(...contestants.map((c) => c.label.length));
  for (let r = 1; r <= p.runs; r++) {
    const order = r % 2 === 1 ? contestants : [...contestants].reverse();
    for (const c of order) {
      await c.prepare();
      const load = loadAverage();
      const cpuBefore = await c.databaseCpuMs?.();
      const brokerBefore = await p.brokerCpuMs?.();
      const started = performance.now();
      const moved = await c.run();
      const seconds = (performance.now() - started - (c.untimedMs?.() ?? 0)) / 1000;
      const cpuAfter = await c.databaseCpuMs?.();
      const brokerAfter = await p.brokerCpuMs?.();
      if (typeof cpuBefore === 'number' && typeof cpuAfter === 'number') cpus.get(c.label)!.push(((cpuAfter - cpuBefore) * 1000) / moved);
      if (typeof brokerBefore === 'number' && typeof brokerAfter === 'number') brokerCpus.get(c.label)!.push(((brokerAfter - brokerBefore) * 1000) / moved);
      await c.verify(moved);
      if (moved !== p.events) throw new Error(`${c.label} moved ${moved} of ${p.events}`);
      rates.get(c.label)!.push(moved / seconds);
      loads.push(load.split(' ')[0]!);
      console.log(`run ${r} ${c.label.padEnd(width)} ${moved} in ${seconds.toFixed(2)} s = ${Math.round(moved / seconds)}/s (load average ${load})`);
    }
  }
  const raw = rates.get(p.raw.label)!;
  const ratio = median(rates.get(p.lazarus.label)!) / median(raw);
  console.log(`\n${p.title}: ${p.events} events, median of ${p.runs} interleaved run(s)\n`);
  const columns = [['DB CPU µs/event', cpus], ['broker CPU µs/event', brokerCpus]] as const;
  const shown = columns.filter(([, m]) => contestants.some((c) => m.get(c.label)!.length > 0));
  console.log(`| contestant | events/s (median) | events/s per run | ÷ raw per run |${shown.map(([name]) => ` ${name} |`).join('')}`);
  console.log(`|---|--:|---|---|${shown.map(() => '--:|').join('')}`);
  for (const c of contestants) {
    const xs = rates.get(c.label)!;
    const perRun = c === p.raw ? '' : xs.map((x, i) => (x / raw[i]!).toFixed(2)).join(', ');
    const cells = shown.map(([, m]) => {
      const ys = m.get(c.label)!;
      return ` ${ys.length ? median(ys).toFixed(0) : '—'} |`;
    });
    console.log(`| ${c.label} | ${Math.round(median(xs))} | ${xs.map(Math.round).join(', ')} | ${perRun} |${cells.join('')}`);
  }
  console.log(`\nlazarus ÷ raw: ${ratio.toFixed(2)} (bar ≥ ${p.bar}: ${ratio >= p.bar ? 'met' : 'NOT met'}); 1-minute load average at each contestant's start: ${loads.join(', ')}`);
}

/** CPU ms used so far by the local process whose command name is `comm` (beam.smp, nats-server), or null. */
export async function processCpuMs(comm: string): Promise<number | null> {
  for (const pid of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(pid)) continue;
    const name = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
    if (name.trim() === comm) return cpuMsOf(Number(pid));
  }
  return null;
}

/**
 * CPU ms used so far by the backends of `pool`'s database whose application_name is `app` (the
 * bench's own pool is not counted); null when /proc cannot see them (a server on another machine).
 */
export async function databaseCpuMs(pool: pg.Pool, app: string): Promise<number | null> {
  const { rows: pids } = await pool.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and application_name = $1', [app]);
  let ms = 0;
  for (const { pid } of pids) {
    const used = await cpuMsOf(pid);
    if (used === null) return null;
    ms += used;
  }
  return ms;
}

/**
 * A migrated database of the bench's own (`<prefix>_<pid>`): the service's handle (application_name
 * lazarus-retry, so its backends' CPU is told apart: `databaseCpuMs(pool, 'lazarus-retry')`) and a
 * one-connection pool for the bench's own reads; `cleanups` closes both and drops the database.
 */
export async function benchDatabase(adminUrl: string, prefix: string, cleanups: Array<() => Promise<unknown>>): Promise<{ dbUrl: string; handle: DbHandle; pool: pg.Pool }> {
  const name = `${prefix}_${process.pid}`;
  const dbUrl = await createDatabase(adminUrl, name);
  cleanups.push(() => dropDatabase(adminUrl, name));
  await migrate(dbUrl, { logger: pino({ level: 'warn' }) });
  const handle = createDb(dbUrl, { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: 'lazarus-retry' });
  cleanups.push(() => handle.close());
  const pool = new pg.Pool({ connectionString: dbUrl, max: 1, application_name: 'bench' });
  pool.on('error', () => {});
  cleanups.push(() => pool.end());
  return { dbUrl, handle, pool };
}

/** Calls each cleanup in reverse order, reporting (not throwing) a failure: every one gets its turn. */
export async function cleanUp(cleanups: Array<() => Promise<unknown>>): Promise<void> {
  for (const cleanup of cleanups.reverse()) {
    await cleanup().catch((error: unknown) => {
      console.error('bench cleanup failed:', error);
      process.exitCode = 1;
    });
  }
}

/** Polls `read` every 50 ms until it returns `want`; throws after `timeoutMs` with what it last read. */
export async function waitFor<T>(what: string, read: () => Promise<T>, want: T, timeoutMs = 60_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await read();
    if (last === want) return;
    if (performance.now() > until) throw new Error(`${what}: ${String(last)} after ${timeoutMs / 1000} s, want ${String(want)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts counting this process's CPU and event-loop time; the function says, for `events` moved since, what they cost. */
function nodeUsage(): (events: number) => string {
  const cpuStart = process.cpuUsage();
  const eluStart = performance.eventLoopUtilization();
  return (events) => {
    const cpu = process.cpuUsage(cpuStart);
    const elu = performance.eventLoopUtilization(eluStart);
    return `Node ${((cpu.user + cpu.system) / Math.max(events, 1)).toFixed(0)} µs CPU an event, event loop ${(elu.utilization * 100).toFixed(0)}% busy`;
  };
}

/** Sends every item with exactly `concurrency` sends in flight until the last ones (a sliding window). */
export async function sendWindowed<T>(items: readonly T[], concurrency: number, send: (item: T) => Promise<void>, label: string): Promise<number> {
  let next = 0;
  let sent = 0;
  let latencySum = 0;
  const usage = nodeUsage();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const t0 = performance.now();
      await send(items[next++]!);
      latencySum += performance.now() - t0;
      sent += 1;
    }
  }));
  console.log(`  ${label}: ${concurrency} in flight, ${(latencySum / Math.max(sent, 1)).toFixed(1)} ms a publish; ${usage(sent)}`);
  return sent;
}

/** Settings over the service's defaults; BEFORE_PIPELINE is the loop before 2026-11-27 (no claiming ahead). */
export interface LoopOptions {
  claimAhead?: boolean;
  outcomeFlushMs?: number;
}
export const BEFORE_PIPELINE: LoopOptions = Object.freeze({ claimAhead: false });

/**
 * Drains every due event through a retry loop as the service runs it (startRetryLoop, the service's
 * defaults: batch 100, concurrency 10, with `options` over them), until `events` succeeded; any
 * failed attempt fails the bench.
 */
export async function redriveThroughLoop(db: Db, deliver: Deliver, events: number, options: LoopOptions = {}): Promise<number> {
  // Where the time goes: deliveries in flight (time-weighted) and each delivery's own latency.
  let inFlight = 0;
  let inFlightArea = 0;
  let changedAt = performance.now();
  let latencySum = 0;
  const started = changedAt;
  const usage = nodeUsage();
  const step = (delta: number) => {
    const now = performance.now();
    inFlightArea += inFlight * (now - changedAt);
    changedAt = now;
    inFlight += delta;
  };
  const measured: Deliver = async (event, policy, signal) => {
    step(1);
    const t0 = performance.now();
    try {
      return await deliver(event, policy, signal);
    } finally {
      latencySum += performance.now() - t0;
      step(-1);
    }
  };
  const loop = startRetryLoop({
    db, deliver: measured, logger: pino({ level: 'warn' }),
    config: {
      workerId: 'bench', batchSize: DEFAULT_RETRY_BATCH_SIZE, concurrency: DEFAULT_RETRY_CONCURRENCY, leaseSeconds: DEFAULT_RETRY_LEASE_SECONDS,
      pollIntervalMs: 50, shutdownTimeoutMs: 10_000, ...options,
    },
  });
  let done = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      loop.events.on('passFailed', reject);
      loop.events.on('passCompleted', (s: RetryPassSummary) => {
        done += s.succeeded;
        if (s.succeeded !== s.claimed) reject(new Error(`a pass claimed ${s.claimed} and delivered ${s.succeeded}: ${JSON.stringify(s)}`));
        else if (done >= events) resolve();
      });
    });
  } finally {
    await loop.stop();
  }
  step(0);
  console.log(`  lazarus${Object.keys(options).length ? ` ${JSON.stringify(options)}` : ''}: ${(inFlightArea / (changedAt - started)).toFixed(1)} deliveries in flight on average, ${(latencySum / Math.max(done, 1)).toFixed(1)} ms a delivery; ${usage(done)}`);
  return done;
}

/** Fails the run unless all `events` of the redrive ended SUCCEEDED (the Lazarus contestant's check). */
export async function assertAllSucceeded(pool: pg.Pool, events: number): Promise<void> {
  const { rows: [r] } = await pool.query<{ n: number }>(`select count(*)::int as n from dead_letter_states where status = 'SUCCEEDED'`);
  if (r!.n !== events) throw new Error(`${r!.n} of ${events} events SUCCEEDED`);
}
