// npm run bench:retention — what a retention pass costs the ingest and the claims running beside it
// (issue 20 item 6): the product's batched DELETE pass against dropping weekly partitions, in one run.
//
// Seed: BENCH_ROWS finished events (80% SUCCEEDED, 10% RESOLVED, 10% DISCARDED, the read bench's
// shapes) bulk-loaded (bench/bulkLoadDeadLetters.ts) as if created 60-90 days ago and finished a
// minute later, each with one SUCCEEDED delivery attempt; plus UNRESOLVED old PENDING/EXHAUSTED
// events through the triggers, which must survive every phase. The retention age is 30 days, so
// every finished event is due for deletion.
// The partitioned copy (phases C0, C; bench/retentionPartitions.ts, raw SQL, not product code):
// retain_weeks, partitioned by list of status into open (PENDING, PROCESSING, EXHAUSTED) and
// finished, the finished part by range of resolved_at, one partition a week; the same columns,
// defaults and indexes as dead_letters (the dedupe_key index not unique: PostgreSQL cannot have it
// so), the same rows. No triggers.
//
// Phases, each BENCH_SECONDS under the same load (bench/retentionLoad.ts: paced single-row INSERTs,
// SKIP LOCKED claims of what was ingested and their completions; lock waits sampled every 20 ms):
//  A   dead_letters, no retention: the baseline.
//  B   dead_letters while retention runs as the service runs it (startPeriodic → runRetentionPass,
//      resting RETENTION_REST_RATIO× each batch's time); `B:batch=200,rest=0` runs it with other
//      options (RetentionPassOptions.batch, .restRatio; rest=0 is back to back).
//  V   dead_letters while VACUUM clears what the passes before it left dead (autovacuum's work after
//      a DELETE pass; a dropped partition leaves none). Not in the default list. `V:autovacuum`
//      runs it with autovacuum's cost delay and limit, as autovacuum would (V runs unthrottled).
//  W   (after the others, no load) WAL per deleted event of the pass in this database alone, by
//      pg_waldump: the WAL columns are cluster-wide, which a shared server makes useless.
//  C0  retain_weeks, no retention: the baseline for C.
//  C   retain_weeks while every finished week older than the retention age is detached
//      (DETACH PARTITION … CONCURRENTLY), its rollup counts subtracted (one GROUP BY into a scratch
//      ledger: what DETACH cannot do through triggers) and dropped, in the transaction of the drop.
// Reported per phase: ingest p50/p99, claim p99, the longest lock wait of a load statement, rows
// removed and per second, WAL written (cluster-wide: other databases' writes count too), and after
// the phase the table's size and dead tuples.
// Env: BENCH_DATABASE_URL (admin URL; a scratch database is created and dropped), BENCH_ROWS
// (20,000), BENCH_SECONDS (10), BENCH_RATE (inserts/s, 200), BENCH_INGEST_CONNECTIONS (2),
// BENCH_PHASES (A,B,C0,C), BENCH_SEED_ORDER ('scattered', the default: neighbouring ids weeks
// apart in created_at, so a pass in resolved_at order touches a heap page per event; 'time':
// created_at rises with the id, as in a table that receives events as they happen),
// BENCH_KEEP_DB=1 keeps the scratch database (its name is printed), and BENCH_REUSE_DB=<name>
// runs the phases on a kept one instead of seeding (what earlier phases removed stays removed).
import pg from 'pg';
import { pino } from 'pino';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { startPeriodic } from '../src/runtime/periodic.ts';
import { RETENTION_BATCH, RETENTION_REST_RATIO, runRetentionPass, type RetentionPassOptions } from '../src/workers/retention.ts';
import { createDatabase, dropDatabase, randomDatabaseName, withDatabase } from '../test/helpers/databases.ts';
import { bulkLoadDeadLetters } from './bulkLoadDeadLetters.ts';
import { RETENTION_APP, runLoad, sampleLocks, type LoadResult, type LockSamples, type Removal } from './retentionLoad.ts';
import { buildPartitionedCopy, dropOldWeeks } from './retentionPartitions.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const ROWS = Number(process.env.BENCH_ROWS ?? 20_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RATE = Number(process.env.BENCH_RATE ?? 200);
const CONNECTIONS = Number(process.env.BENCH_INGEST_CONNECTIONS ?? 2);
const PHASES = (process.env.BENCH_PHASES ?? 'A,B,C0,C').split(',');
const SEED_ORDER = process.env.BENCH_SEED_ORDER === 'time' ? 'time' : 'scattered';
const DAY_MS = 86_400_000;
const RETENTION_MS = 30 * DAY_MS;
const UNRESOLVED = 100;
const logger = pino({ level: 'warn' });
const log = (line: string) => process.stderr.write(`${line}\n`);

interface PhaseResult {
  label: string; table: string; load: LoadResult; locks: LockSamples; removal: Removal | null; walMb: number;
  after: { heap: string; indexes: string; deadTuples: number; tombstones: string };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN;
};
const since = (t: number) => (performance.now() - t) / 1000;
const walLsn = async (pool: pg.Pool) => (await pool.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0]!.lsn;

/** One SUCCEEDED attempt per finished event (the cascade a purge pays) and the old unresolved events. */
async function seedAroundHistory(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // No trigger on delivery_attempts builds state (stamp: the columns' defaults; notify: a hint).
    await client.query('set session_replication_role = replica');
    await client.query(`insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, finished_at, duration_ms, outcome)
                        select id, attempts, 'seed', resolved_at, resolved_at, 12, 'SUCCEEDED' from dead_letters_current`);
    await client.query('set session_replication_role = origin');
    await client.query(`insert into dead_letters (event_type, status, next_attempt_at, created_at, error_message)
                        select 'bench.unresolved', s.status::"DeadLetterStatus", case when s.status = 'PENDING' then now() + interval '1 year' end,
                               now() - interval '90 days', 'HTTP 503 from inventory-service'
                          from generate_series(1, $1::int) g, lateral (select case when g % 2 = 0 then 'PENDING' else 'EXHAUSTED' end as status) s`, [UNRESOLVED]);
    await client.query('vacuum analyze delivery_attempts');
  } finally {
    await client.end();
  }
}

/** The product's retention as the service runs it: startPeriodic → runRetentionPass, until stopped. */
function serviceRetention(url: string, options: Pick<RetentionPassOptions, 'batch' | 'restRatio'>) {
  return async (stop: AbortSignal): Promise<Removal> => {
    const handle = createDb(url, { poolMax: 1, acquireTimeoutMs: 10_000, statementTimeoutMs: 600_000, applicationName: RETENTION_APP });
    let rows = 0;
    let batches = 0;
    let endedAt: number | null = null;
    const started = performance.now();
    const periodic = startPeriodic({
      name: 'retention', everyMs: 3_600_000, immediately: true, logger,
      runOnce: async (signal) => {
        await runRetentionPass(handle.db, { ...options, olderThanMs: RETENTION_MS, signal, onBatch: (n) => ((rows += n), (batches += 1)) });
        if (!signal.aborted) endedAt = performance.now();
      },
    });
    await new Promise((resolve) => stop.addEventListener('abort', resolve, { once: true }));
    await periodic.stop();
    await handle.close();
    const seconds = ((endedAt ?? performance.now()) - started) / 1000;
    return { rows, seconds, steps: [`${batches} batches, ${endedAt !== null ? 'pass finished' : 'pass still running at the end of the phase'}`] };
  };
}

/**
 * The WAL one retention pass writes per deleted event, in this database alone: a few seconds of
 * batches with no load, then pg_waldump over that stretch of WAL, counting the records whose block
 * references name this database (commit records name none: ~50 bytes a batch, left out). WAL
 * position and pg_stat_wal are cluster-wide, and other databases on a shared server write too.
 * Needs pg_waldump (BENCH_PG_WALDUMP) and read access to the server's pg_wal; null without them.
 */
async function walPerPurgedRow(url: string, pool: pg.Pool): Promise<{ rows: number; bytes: number; records: number } | null> {
  const waldump = process.env.BENCH_PG_WALDUMP ?? '/usr/lib/postgresql/15/bin/pg_waldump';
  const { rows: [db] } = await pool.query<{ oid: string; dir: string }>(`select (select oid::text from pg_database where datname = current_database()) as oid,
    current_setting('data_directory') || '/pg_wal' as dir`);
  const { existsSync } = await import('node:fs');
  if (!existsSync(waldump) || !existsSync(db!.dir)) return null;
  const handle = createDb(url, { poolMax: 1, acquireTimeoutMs: 10_000, statementTimeoutMs: 600_000, applicationName: RETENTION_APP });
  const stop = AbortSignal.timeout(3_000);
  const start = await walLsn(pool);
  const rows = await runRetentionPass(handle.db, { olderThanMs: RETENTION_MS, signal: stop });
  const end = await walLsn(pool);
  await handle.close();
  if (rows === 0) return { rows, bytes: 0, records: 0 }; // the phases before took every event: no WAL to read
  const { execFile } = await import('node:child_process');
  // pg_waldump exits non-zero at the end of the WAL it can read; what it printed before counts.
  const { out, problem } = await new Promise<{ out: string; problem: string }>((resolve, reject) => execFile(waldump, ['-p', db!.dir, '-s', start, '-e', end],
    { maxBuffer: 1 << 30 }, (error, stdout, stderr) => (error && !stdout ? reject(error) : resolve({ out: stdout, problem: stderr.split('\n')[0] ?? '' }))));
  let bytes = 0;
  let records = 0;
  const mine = new RegExp(`rel \\d+/${db!.oid}/`);
  for (const line of out.split('\n')) {
    if (!mine.test(line)) continue;
    records += 1;
    bytes += Number(/len \(rec\/tot\):\s*\d+\/\s*(\d+)/.exec(line)?.[1] ?? 0);
  }
  if (records === 0 && rows > 0) log(`W: no WAL records of this database between ${start} and ${end}; pg_waldump said: ${problem || 'nothing'}`);
  return { rows, bytes, records };
}

/** VACUUM of what a pass leaves dead (what autovacuum does after it), beside the load. */
// `asAutovacuum`: with autovacuum's cost-based delay (a manual VACUUM runs unthrottled), which is
// how the server clears a pass's dead tuples unless someone runs VACUUM by hand.
function vacuumAfterPass(url: string, asAutovacuum: boolean) {
  return async (): Promise<Removal> => {
    const client = new pg.Client({ connectionString: url, application_name: RETENTION_APP });
    await client.connect();
    try {
      if (asAutovacuum) {
        await client.query(`select set_config('vacuum_cost_delay', current_setting('autovacuum_vacuum_cost_delay'), false),
          set_config('vacuum_cost_limit', case when current_setting('autovacuum_vacuum_cost_limit') = '-1'
            then current_setting('vacuum_cost_limit') else current_setting('autovacuum_vacuum_cost_limit') end, false)`);
      }
      const tables = ['dead_letters', 'delivery_attempts', 'dead_letter_error_texts'];
      const dead = async () => (await client.query<{ n: string }>(`select pg_stat_clear_snapshot(), (select coalesce(sum(n_dead_tup), 0)::text
        from pg_stat_user_tables where relname = any($1::text[])) as n`, [tables])).rows[0]!.n;
      const before = Number(await dead());
      const started = performance.now();
      const steps: string[] = [];
      for (const table of tables) {
        const t = performance.now();
        await client.query(`vacuum ${table}`);
        steps.push(`vacuum ${table}: ${since(t).toFixed(1)} s`);
      }
      return { rows: before, seconds: since(started), steps: [...steps, `dead tuples before ${before}, after ${await dead()}`] };
    } finally {
      await client.end();
    }
  };
}

async function runPhase(url: string, pool: pg.Pool, label: string, table: string, retention?: (stop: AbortSignal) => Promise<Removal>): Promise<PhaseResult> {
  const walBefore = await walLsn(pool);
  const stop = new AbortController();
  const samplerStop = new AbortController();
  const sampler = sampleLocks(url, samplerStop.signal);
  const load = runLoad({ url, table, rate: RATE, connections: CONNECTIONS, claimBatch: 50, claimEveryMs: 100 }, stop.signal);
  const timer = setTimeout(() => stop.abort(), SECONDS * 1000);
  const removing = retention ? retention(stop.signal) : Promise.resolve(null);
  // A failed removal stops the load and the sampler before the error goes up.
  removing.catch(() => stop.abort());
  const [loaded, removed] = await Promise.allSettled([load, removing]);
  clearTimeout(timer);
  samplerStop.abort();
  const locks = await sampler;
  if (loaded.status === 'rejected') throw loaded.reason;
  if (removed.status === 'rejected') throw removed.reason;
  const removal = removed.value;
  const { rows: [wal] } = await pool.query<{ mb: number }>('select pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) / 1048576.0 as mb', [walBefore]);
  await pool.query('select pg_stat_clear_snapshot()');
  // The table and, if partitioned, every partition under it (pg_partition_tree is empty for a plain table).
  const { rows: [after] } = await pool.query(`
    select pg_size_pretty(sum(pg_table_size(t.relid))) as heap, pg_size_pretty(sum(pg_indexes_size(t.relid))) as indexes,
           coalesce(sum(s.n_dead_tup), 0)::int as dead_tuples, pg_size_pretty(pg_total_relation_size('dead_letter_tombstones')) as tombstones
      from (select $1::regclass as relid union select relid from pg_partition_tree($1::regclass)) t
      left join pg_stat_user_tables s on s.relid = t.relid`, [table]);
  const result: PhaseResult = { label, table, load: loaded.value, locks, removal, walMb: Number(wal!.mb), after: { heap: after.heap, indexes: after.indexes, deadTuples: after.dead_tuples, tombstones: after.tombstones } };
  log(`${label}: ${JSON.stringify({ ...result, load: { inserts: loaded.value.ingestMs.length, claimed: loaded.value.claimed, seconds: loaded.value.seconds } })}`);
  return result;
}

const reuse = process.env.BENCH_REUSE_DB;
const name = reuse ?? randomDatabaseName('lazarus_retain');
const url = reuse ? withDatabase(adminUrl, reuse) : await createDatabase(adminUrl, name);
log(`database ${name}`);
const pool = new pg.Pool({ connectionString: url, max: 2 });
pool.on('error', () => {});
const startedAt = performance.now();
try {
  if (!reuse) {
    await migrate(url, { logger });
    const seeded = await bulkLoadDeadLetters({ url, rows: ROWS, mix: 'finished', now: new Date(Date.now() - 60 * DAY_MS), resolvedAt: 'updated', createdOrder: SEED_ORDER, log });
    await seedAroundHistory(url);
    log(`seeded ${ROWS} finished events (${SEED_ORDER}) in ${seeded.totalSeconds.toFixed(1)} s (${since(startedAt).toFixed(0)} s so far)`);
  }
  if (!reuse && PHASES.some((p) => p.startsWith('C'))) {
    const t = performance.now();
    await buildPartitionedCopy(url);
    log(`partitioned copy built in ${since(t).toFixed(1)} s`);
  }
  const { rows: [size] } = await pool.query(`select pg_size_pretty(pg_database_size(current_database())) as db,
    pg_size_pretty(pg_total_relation_size('dead_letters')) as dl`);
  const setupSeconds = since(startedAt);

  const results: PhaseResult[] = [];
  const phases: Record<string, () => Promise<PhaseResult>> = {
    A: () => runPhase(url, pool, 'A: dead_letters, no retention', 'dead_letters'),
    V: () => runPhase(url, pool, 'V: dead_letters, VACUUM after the passes (rows: dead tuples)', 'dead_letters', vacuumAfterPass(url, false)),
    'V:autovacuum': () => runPhase(url, pool, "V (autovacuum's delay): dead_letters, VACUUM after the passes (rows: dead tuples)", 'dead_letters', vacuumAfterPass(url, true)),
    C0: () => runPhase(url, pool, 'C0: partitioned copy, no retention', 'retain_weeks'),
    C: () => runPhase(url, pool, 'C: partitioned copy, detach concurrently + drop old weeks', 'retain_weeks', dropOldWeeks(url, RETENTION_MS)),
  };
  for (const p of PHASES.filter((x) => x !== 'W')) {
    // B, or B:batch=200,rest=1: the product's pass with the service's defaults, or with these options.
    const [phase, spec] = p.split(':');
    if (phase === 'B') {
      const options: Pick<RetentionPassOptions, 'batch' | 'restRatio'> = { restRatio: RETENTION_REST_RATIO, ...Object.fromEntries((spec ?? '').split(',').filter(Boolean).map((kv) => kv.split('=')).map(([k, v]) => [k === 'rest' ? 'restRatio' : k!, Number(v)])) };
      const label = `B${spec ? ` (${spec})` : ''}: dead_letters, retention pass (batches of ${options.batch ?? RETENTION_BATCH}, ${options.restRatio ? `resting ${options.restRatio}× each batch's time` : 'back to back'})`;
      results.push(await runPhase(url, pool, label, 'dead_letters', serviceRetention(url, options)));
    } else {
      const run = phases[p];
      if (!run) throw new Error(`unknown phase ${p}: BENCH_PHASES takes A, B[:batch=…,rest=…], V[:autovacuum], W, C0, C`);
      results.push(await run());
    }
  }

  const wal = PHASES.includes('W') ? await walPerPurgedRow(url, pool) : null;
  const survivors = async (table: string) => (await pool.query<{ n: number }>(`select count(*)::int as n from ${table} where event_type = 'bench.unresolved'`)).rows[0]!.n;
  const hasCopy = (await pool.query(`select to_regclass('retain_weeks') is not null as ok`)).rows[0].ok as boolean;
  const kept = { dead_letters: await survivors('dead_letters'), ...(hasCopy && { retain_weeks: await survivors('retain_weeks') }) };
  if (Object.values(kept).some((n) => n !== UNRESOLVED)) throw new Error(`unresolved events were dropped: ${JSON.stringify(kept)}`);

  const { rows: [count] } = await pool.query<{ n: string }>(`select reltuples::bigint::text as n from pg_class where relname = 'dead_letters'`);
  console.log(`\n${reuse ? `a kept database (${name}, ~${Number(count!.n).toLocaleString('en')} rows)` : ROWS.toLocaleString('en')} finished events (all older than the 30-day retention age) + ${UNRESOLVED} old unresolved ones; ` +
    `database ${size.db}, dead_letters with indexes ${size.dl}; setup ${setupSeconds.toFixed(0)} s. Load per phase: ${SECONDS} s, ` +
    `${RATE} single-row INSERTs/s on ${CONNECTIONS} connections, a claim of up to 50 every 100 ms. Latencies in ms.`);
  console.log('| phase | ingest p50 / p99 | inserts | claim p99 | complete p99 | max lock wait | rows removed | rows removed/s | WAL MB |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    const f = (x: number) => x.toFixed(1);
    const rm = r.removal;
    console.log(`| ${r.label} | ${f(percentile(r.load.ingestMs, 50))} / ${f(percentile(r.load.ingestMs, 99))} | ${r.load.ingestMs.length} | ` +
      `${f(percentile(r.load.claimMs, 99))} | ${f(percentile(r.load.completeMs, 99))} | ${r.locks.waitingSamples ? f(r.locks.maxWaitMs) : '0 (none seen)'} | ` +
      `${rm ? rm.rows.toLocaleString('en') : '–'} | ${rm && rm.seconds > 0 ? Math.round(rm.rows / rm.seconds).toLocaleString('en') : '–'} | ${r.walMb.toFixed(0)} |`);
  }
  const baseline = (label: string) => results.find((r) => r.label.startsWith(label.startsWith('C') ? 'C0:' : 'A:'));
  console.log('\n| phase | ingest p99 ÷ its baseline (bar ≤ 2) | lock-wait samples: kind × samples ≤ longest; blockers | retention held | after: heap / indexes, dead tuples, tombstones |');
  console.log('|---|---:|---|---|---|');
  for (const r of results) {
    const base = r.removal ? baseline(r.label) : undefined;
    const ratio = base ? (percentile(r.load.ingestMs, 99) / percentile(base.load.ingestMs, 99)).toFixed(2) : '–';
    const blockers = Object.entries(r.locks.blockers).map(([b, v]) => `${b} ×${v.samples} ≤ ${v.maxMs.toFixed(0)} ms`).join(', ');
    const kinds = Object.entries(r.locks.byKind).map(([k, v]) => `${k} ×${v.samples} ≤ ${v.maxMs.toFixed(0)} ms`).join(', ');
    console.log(`| ${r.label.split(':')[0]} | ${ratio} | ${r.locks.waitingSamples}${kinds ? `: ${kinds}` : ''}${blockers ? `; blocked by ${blockers}` : ''} | ${r.locks.retentionLocks.join('; ') || '–'} | ` +
      `${r.after.heap} / ${r.after.indexes}, ${r.after.deadTuples.toLocaleString('en')}, ${r.after.tombstones} |`);
  }
  for (const r of results) if (r.removal) console.log(`\n${r.label}:\n${r.removal.steps.map((s) => `  ${s}`).join('\n')}`);
  if (wal) {
    console.log(`\nW: WAL of retention alone in this database (pg_waldump, 3 s of batches, no load): ${wal.rows.toLocaleString('en')} events deleted, ` +
      `${(wal.bytes / 1048576).toFixed(1)} MB in ${wal.records.toLocaleString('en')} records = ${wal.rows ? Math.round(wal.bytes / wal.rows).toLocaleString('en') : '–'} bytes per event`);
  }
  console.log(`\nunresolved old events kept: ${JSON.stringify(kept)}; total ${since(startedAt).toFixed(0)} s`);
} finally {
  await pool.end();
  if (!process.env.BENCH_KEEP_DB && !reuse) await dropDatabase(adminUrl, name);
}
