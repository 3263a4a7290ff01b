// npm run bench:upgrade — issue 32's bar "upgrades never stop producers": a database of BENCH_ROWS
// events (default 1,000,000) at the previous release's schema is upgraded with the service's own
// migrator while producers insert at a steady rate and a retry loop drains their events.
//
//  1. A scratch database is migrated up to BENCH_CUTOFF (default 20261202100000_change_hints_setting,
//     the last migration of the previous release) and seeded: the bench bulk loader
//     (bench/bulkLoadDeadLetters.ts), or with BENCH_SEED=triggers one INSERT … SELECT per 50,000
//     rows through the triggers (for a cut-off whose schema the loader no longer fits). A copy of it
//     (CREATE DATABASE … TEMPLATE) is the one-shot database.
//  2. BENCH_PRODUCERS connections (default 8) INSERT single rows of type 'bench.upgrade' (autocommit,
//     BENCH_RATE inserts/s between them, default 100, open loop: each insert has a due time and its
//     latency counts from then, so a stall counts in full for every insert it delays). A retry loop
//     in its own process (test/helpers/retryWorker.ts) delivers them to a local webhook sink. The
//     seeded rows' types have no target, so the drain never touches them.
//  3. After BENCH_SECONDS (default 20) of steady load, the migrations after the cut-off are applied
//     by migrate(), producers and drain still running; then BENCH_SECONDS more.
//  4. A sampler reads pg_locks every 50 ms: every heavyweight lock wait in the database (waitstart),
//     keyed by backend and start, at the longest it was seen.
//  5. The one-shot database is migrated with no load, and the seeded rows of dead_letters,
//     dead_letter_states, dead_letter_error_texts and dead_letter_actions are compared with the
//     upgraded ones (count and a sum of per-row hashes of every column but change_id and change_xid,
//     which record the transaction that wrote a row), as is the schema (columns, indexes,
//     constraints, triggers, functions, views).
// Prints the bars and exits 1 when one fails (BENCH_TIMING_BARS=report: only the row, schema and
// failed-insert bars do). Both databases are dropped whatever happens.
// BENCH_DATABASE_URL (or TEST_DATABASE_URL) names an admin database.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { pino } from 'pino';
import { migrate, readMigrations } from '../src/db/migrate.ts';
import { adminQuery, createDatabase, dropDatabase, randomDatabaseName, withDatabase } from '../test/helpers/databases.ts';
import { copyOfMigrations } from '../test/helpers/migrations.ts';
import { bulkLoadDeadLetters, insertThroughTriggers } from './bulkLoadDeadLetters.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const CUTOFF = process.env.BENCH_CUTOFF ?? '20261202100000_change_hints_setting';
const SEED = process.env.BENCH_SEED ?? 'bulk';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const PRODUCERS = Number(process.env.BENCH_PRODUCERS ?? 8);
const RATE = Number(process.env.BENCH_RATE ?? 100);
const SAMPLE_MS = 50;
const TRIGGER_SEED_CHUNK = 50_000;
const EVENT_TYPE = 'bench.upgrade';
const BAR_LOCK_WAIT_MS = 1_000;
const BAR_P99_RATIO = 2;
/** BENCH_TIMING_BARS=report prints the latency and lock-wait bars without failing on them (CI's tiny smoke run). */
const TIMING_BARS_FAIL = process.env.BENCH_TIMING_BARS !== 'report';
/** The seeded rows compared with the one-shot database: table and the column that holds the event id. */
const COMPARED_TABLES: Record<string, string> = {
  dead_letters: 'id', dead_letter_states: 'id', dead_letter_error_texts: 'dead_letter_id', dead_letter_actions: 'dead_letter_id',
};
const WORKER = fileURLToPath(new URL('../test/helpers/retryWorker.ts', import.meta.url));
const silent = pino({ level: 'silent' });
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Insert { dueMs: number; latencyMs: number }
interface LockWait { ms: number; application: string; mode: string; relation: string; query: string }

const names = { upgraded: randomDatabaseName('lazarus_bench_up'), oneShot: randomDatabaseName('lazarus_bench_one') };
const migrationsBefore = await copyOfMigrations((entry) => entry <= CUTOFF);
const pending = (await readMigrations()).map((m) => m.name).filter((n) => n > CUTOFF);
const stops: Array<() => Promise<unknown>> = [];
try {
  const url = await createDatabase(adminUrl, names.upgraded);
  await migrate(url, { migrationsDir: migrationsBefore, logger: silent });
  const seedStarted = performance.now();
  await seed(url);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  await adminQuery(adminUrl, `create database "${names.oneShot}" template "${names.upgraded}" strategy file_copy`);
  const oneShotUrl = withDatabase(adminUrl, names.oneShot);
  log(`seeded ${ROWS} events in ${seedSeconds.toFixed(0)} s; pending after ${CUTOFF}: ${pending.join(', ') || 'none'}`);

  const sink = await startSink();
  stops.push(() => new Promise((r) => sink.server.close(r)));
  const admin = new pg.Client({ connectionString: url, application_name: 'bench-admin' });
  await admin.connect();
  stops.push(() => admin.end());
  await admin.query(`insert into retry_policies (event_type, target_url, allow_private_target, signing_secret)
                     values ($1, $2, true, 'bench-signing-secret-0123456789')`, [EVENT_TYPE, sink.url]);
  const worker = await startWorker(url);
  stops.push(async () => { if (worker.exitCode === null && worker.signalCode === null) { worker.kill('SIGTERM'); await once(worker, 'exit'); } });
  const sampler = startLockSampler(url);
  stops.push(sampler.stop);
  const producers = await startProducers(url);
  stops.push(producers.stop);

  await sleep(SECONDS * 1000);
  const retries: Array<Record<string, unknown>> = [];
  const migrationStart = performance.now();
  const { applied } = await migrate(url, { logger: { info: () => {}, warn: (fields: Record<string, unknown>) => retries.push(fields) } });
  const migrationEnd = performance.now();
  await sleep(SECONDS * 1000);
  await producers.stop();
  await sampler.stop();
  const delivered = sink.count();

  await migrate(oneShotUrl, { logger: silent });
  const [upgraded, oneShot] = await Promise.all([fingerprint(url), fingerprint(oneShotUrl)]);

  const phase = (from: number, to: number) => producers.inserts.filter((i) => i.dueMs >= from && i.dueMs < to);
  const steady = phase(0, migrationStart);
  const during = phase(migrationStart, migrationEnd);
  const after = phase(migrationEnd, Infinity);
  const longest = [...sampler.waits.values()].sort((a, b) => b.ms - a.ms)[0];
  const tablesDiffering = Object.keys(upgraded.tables).filter((t) => upgraded.tables[t] !== oneShot.tables[t]);
  const schemaOnlyUpgraded = upgraded.schema.filter((line) => !oneShot.schema.includes(line));
  const schemaOnlyOneShot = oneShot.schema.filter((line) => !upgraded.schema.includes(line));
  const p99Steady = percentile(steady, 0.99);
  const p99During = percentile(during, 0.99);

  const bars: Array<[string, string, boolean, isTiming?: boolean]> = [
    ['0 failed inserts', `${producers.failures.length} of ${producers.inserts.length + producers.failures.length}`, producers.failures.length === 0],
    [`ingest p99 during ≤ ${BAR_P99_RATIO}× steady`, during.length
      ? `${fmt(p99During)} ms (${during.length} inserts) vs ${fmt(p99Steady)} ms: ${(p99During / p99Steady).toFixed(2)}×`
      : `no insert fell due in the migration's ${fmt(migrationEnd - migrationStart)} ms`, !during.length || p99During <= BAR_P99_RATIO * p99Steady, true],
    [`no lock wait > ${BAR_LOCK_WAIT_MS / 1000} s`, longest ? `${fmt(longest.ms)} ms, ${longest.application}: ${longest.mode} on ${longest.relation}, ${longest.query}` : 'no wait seen',
      !longest || longest.ms <= BAR_LOCK_WAIT_MS, true],
    ['seeded rows equal a one-shot upgrade', tablesDiffering.length ? `differ: ${tablesDiffering.join(', ')}` : Object.entries(upgraded.tables).map(([t, d]) => `${t} ${d.split(' ')[0]}`).join(', '),
      tablesDiffering.length === 0],
    ['schema equals a one-shot upgrade', schemaOnlyUpgraded.length + schemaOnlyOneShot.length
      ? `only upgraded: ${schemaOnlyUpgraded.slice(0, 5).join(' | ')}; only one-shot: ${schemaOnlyOneShot.slice(0, 5).join(' | ')}`
      : `${upgraded.schema.length} objects`, schemaOnlyUpgraded.length + schemaOnlyOneShot.length === 0],
  ];
  const rate = (inserts: Insert[], seconds: number) => (seconds > 0 ? `${Math.round(inserts.length / seconds)}/s` : '—');
  console.log(`bench:upgrade — ${ROWS.toLocaleString('en')} events seeded (${SEED}, ${seedSeconds.toFixed(0)} s) at ${CUTOFF}`);
  console.log(`applied under load: ${applied.join(', ') || 'nothing (no migration after the cut-off)'} in ${fmt(migrationEnd - migrationStart)} ms, ${retries.length} lock-timeout retries`);
  console.log(`load: ${PRODUCERS} producers at ${RATE} inserts/s for ${SECONDS} s + the migration + ${SECONDS} s; retry loop delivered ${delivered} webhooks; load average ${loadavg()[0]!.toFixed(2)}`);
  console.log('');
  console.log('| phase | inserts | rate | p50 ms | p99 ms | max ms |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const [label, inserts, seconds] of [['steady', steady, migrationStart / 1000 - producers.startedAtS], ['during the upgrade', during, (migrationEnd - migrationStart) / 1000],
    ['after', after, SECONDS]] as const) {
    console.log(`| ${label} | ${inserts.length} | ${rate(inserts, seconds)} | ${fmt(percentile(inserts, 0.5))} | ${fmt(percentile(inserts, 0.99))} | ${fmt(percentile(inserts, 1))} |`);
  }
  console.log('');
  console.log('| bar | measured | pass |');
  console.log('| --- | --- | --- |');
  for (const [bar, value, ok] of bars) console.log(`| ${bar} | ${value} | ${ok ? 'yes' : 'NO'} |`);
  for (const failure of producers.failures.slice(0, 5)) console.log(`failed insert: ${failure}`);
  if (bars.some(([, , ok, isTiming]) => !ok && (TIMING_BARS_FAIL || !isTiming))) process.exitCode = 1;
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => {});
  await Promise.all(Object.values(names).map((name) => dropDatabase(adminUrl, name)));
  await rm(migrationsBefore, { recursive: true, force: true });
}

async function seed(url: string): Promise<void> {
  const now = new Date();
  if (SEED === 'bulk') {
    await bulkLoadDeadLetters({ url, rows: ROWS, now, log: ROWS >= 100_000 ? log : undefined });
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let lo = 1; lo <= ROWS; lo += TRIGGER_SEED_CHUNK) {
      await insertThroughTriggers(client, lo, Math.min(ROWS, lo + TRIGGER_SEED_CHUNK - 1), now);
      if (ROWS >= 100_000) log(`seeded ${Math.min(ROWS, lo + TRIGGER_SEED_CHUNK - 1)} rows through the triggers`);
    }
    await client.query('vacuum analyze');
  } finally {
    await client.end();
  }
}

async function startSink() {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => { count++; res.writeHead(200).end('ok'); });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, count: () => count };
}

async function startWorker(url: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [WORKER, JSON.stringify({
    databaseUrl: url, workerId: 'bench-upgrade', inProcess: false, batchSize: 100, concurrency: 20, leaseSeconds: 30, pollIntervalMs: 100,
  })], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  while (!out.includes('ready')) await once(child.stdout!, 'data');
  return child;
}

/** Open loop: insert k of producer i is due at start + (k × PRODUCERS + i) / RATE s. */
async function startProducers(url: string) {
  const inserts: Insert[] = [];
  const failures: string[] = [];
  const intervalMs = 1000 / RATE;
  let stopAtMs = Infinity;
  const insert = `insert into dead_letters (event_type, payload, error_message) values ($1, $2::jsonb, $3)`;
  const clients = await Promise.all(Array.from({ length: PRODUCERS }, async () => {
    const client = new pg.Client({ connectionString: url, application_name: 'bench-producer' });
    client.on('error', () => {});
    await client.connect();
    await client.query(insert, [EVENT_TYPE, JSON.stringify({ warmUp: true }), 'warm-up']);
    return client;
  }));
  let stop!: () => void;
  const stopping = new Promise<void>((resolve) => (stop = resolve));
  const start = performance.now();
  const loops = clients.map(async (client, i) => {
    for (let k = 0; ; k++) {
      const dueMs = start + (k * PRODUCERS + i) * intervalMs;
      const waitMs = dueMs - performance.now();
      if (waitMs > 0) await Promise.race([sleep(waitMs), stopping]);
      if (dueMs >= stopAtMs) break;
      try {
        await client.query(insert, [EVENT_TYPE, JSON.stringify({ orderId: k * PRODUCERS + i, producer: i, note: 'x'.repeat(400) }), 'HTTP 503 from upgrade-bench']);
        inserts.push({ dueMs, latencyMs: performance.now() - dueMs });
      } catch (error) {
        failures.push(error instanceof Error ? error.message : String(error));
      }
    }
  });
  const done = Promise.all(loops).then(() => Promise.all(clients.map((c) => c.end())));
  return {
    inserts, failures, startedAtS: start / 1000,
    /** Inserts already due still run (a producer behind its schedule catches up), later ones do not. */
    stop: async () => { stopAtMs = Math.min(stopAtMs, performance.now()); stop(); await done; },
  };
}

// pg_locks.waitstart (PostgreSQL 14+) says when each waiting backend began to wait; a wait is seen
// at its longest by the last sample before it ends, so the figure is low by at most SAMPLE_MS.
function startLockSampler(url: string) {
  const waits = new Map<string, LockWait>();
  const client = new pg.Client({ connectionString: url, application_name: 'bench-lock-sampler' });
  client.on('error', () => {});
  let stopped = false;
  const running = (async () => {
    await client.connect();
    while (!stopped) {
      const { rows } = await client.query<LockWait & { key: string }>(`
        select l.pid || ' ' || l.waitstart as key, extract(epoch from clock_timestamp() - l.waitstart) * 1000 as ms,
               a.application_name as application, l.mode, coalesce(l.relation::regclass::text, l.locktype) as relation,
               regexp_replace(left(a.query, 100), '\\s+', ' ', 'g') as query
          from pg_locks l join pg_stat_activity a on a.pid = l.pid
         where not l.granted and l.waitstart is not null and a.datname = current_database()`);
      for (const { key, ...wait } of rows) {
        if ((waits.get(key)?.ms ?? -1) < wait.ms) waits.set(key, { ...wait, ms: Number(wait.ms) });
      }
      await sleep(SAMPLE_MS);
    }
    await client.end();
  })();
  return { waits, stop: async () => { stopped = true; await running; } };
}

/** Per compared table "count hash-sum" over the seeded rows, and the schema as sorted lines. */
async function fingerprint(url: string): Promise<{ tables: Record<string, string>; schema: string[] }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables: Record<string, string> = {};
    for (const [table, key] of Object.entries(COMPARED_TABLES)) {
      const { rows: [r] } = await client.query<{ digest: string }>(`
        select count(*) || ' ' || coalesce(sum(('x' || left(md5((to_jsonb(t) - 'change_id' - 'change_xid')::text), 15))::bit(60)::bigint::numeric), 0) as digest
          from ${table} t where ${key} <= $1`, [ROWS]);
      tables[table] = r!.digest;
    }
    const { rows } = await client.query<{ line: string }>(`
      select 'column ' || table_name || '.' || column_name || ' #' || ordinal_position || ' ' || udt_name || ' ' || is_nullable || ' ' || coalesce(column_default, '') as line
        from information_schema.columns where table_schema = 'public'
      union all select 'index ' || indexdef from pg_indexes where schemaname = 'public'
      union all select 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) from pg_constraint where connamespace = 'public'::regnamespace
      union all select 'trigger ' || pg_get_triggerdef(oid) from pg_trigger where not tgisinternal
      union all select 'function ' || oid::regprocedure || ' ' || md5(pg_get_functiondef(oid)) from pg_proc where pronamespace = 'public'::regnamespace and prokind in ('f', 'p')
      union all select 'view ' || viewname || ' ' || md5(definition) from pg_views where schemaname = 'public'
      order by 1`);
    return { tables, schema: rows.map((r) => r.line) };
  } finally {
    await client.end();
  }
}

/** Nearest-rank percentile of the latencies, in ms; NaN for none. */
function percentile(inserts: Insert[], p: number): number {
  if (!inserts.length) return NaN;
  const sorted = inserts.map((i) => i.latencyMs).sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

function fmt(ms: number): string {
  return Number.isNaN(ms) ? '—' : ms < 10 ? ms.toFixed(2) : ms.toFixed(0);
}
