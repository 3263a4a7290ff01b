// npm run bench:retry:scale — the same backlog drained by 1, 2 and 3 retry processes on one
// database. Each process is bench/retryScaleWorker.ts: the retry loop as the service runs it
// (batch 100, concurrency 10, pool of 4) with a no-op in-process handler. Per process count: drain
// time (from 'go' until no event is left unsucceeded, polled every 50 ms), events/s, each process's
// share, duplicates (deliveries beyond one per event, by the handlers' counts and by SUCCEEDED
// attempt rows: both must be 0), and the CPU the server processes of this database's connections
// used meanwhile, in cores (from /proc: the server must run on this machine; background writers
// and other databases are left out).
// BENCH_EVENTS (default 50,000), BENCH_RUNS (default 3, medians), BENCH_PROCESSES (default 1,2,3),
// BENCH_DATABASE_URL (admin URL; a scratch database is created and dropped).
// BENCH_HISTORY_ROWS (default 0): that many finished events (80% SUCCEEDED, 10% RESOLVED, 10%
// DISCARDED, the read bench's shapes, bench/syntheticDeadLetters.ts) are bulk-loaded first
// (bench/bulkLoadDeadLetters.ts) and stay behind every backlog, so every claim and completion
// works against a table and indexes of that size. Each seed then deletes only the last backlog.
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { pino } from 'pino';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import { seedDueEvents } from './seedDueEvents.ts';
import { bulkLoadDeadLetters, verifyDerivedTables } from './bulkLoadDeadLetters.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PROCESSES = (process.env.BENCH_PROCESSES ?? '1,2,3').split(',').map(Number);
const HISTORY_ROWS = Number(process.env.BENCH_HISTORY_ROWS ?? 0);
const POLL_MS = 50;
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds used so far by each of these processes (those that ended are left out). */
function cpuSecondsOf(pids: number[]): Map<number, number> {
  const used = new Map<number, number>();
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      used.set(pid, (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND); // utime, stime
    } catch {
      // ended meanwhile
    }
  }
  return used;
}

const message = (child: ChildProcess) => new Promise<unknown>((resolve, reject) => {
  child.once('message', resolve);
  child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
});

const name = `lazarus_scale_${process.pid}`;
const dbUrl = await createDatabase(adminUrl, name);
const pool = new pg.Pool({ connectionString: dbUrl, max: 2 });
pool.on('error', () => {});
interface Result { eventsPerSecond: number; shares: number[]; duplicates: number; dbCores: number }
const results = new Map<number, Result[]>(PROCESSES.map((n) => [n, []]));
try {
  await migrate(dbUrl, { logger: pino({ level: 'warn' }) });
  if (HISTORY_ROWS > 0) {
    const t = await bulkLoadDeadLetters({ url: dbUrl, rows: HISTORY_ROWS, mix: 'finished', log: (line) => process.stderr.write(`${line}\n`) });
    await verifyDerivedTables(dbUrl);
    const { rows: [size] } = await pool.query(`select pg_size_pretty(pg_total_relation_size('dead_letters')) as size`);
    console.log(`History: ${HISTORY_ROWS} finished events bulk-loaded in ${t.totalSeconds.toFixed(1)} s (dead_letters with its indexes: ${size.size}), checked against a scan.`);
  }
  // Only the backlog: the history's RESOLVED and DISCARDED rows are finished too.
  const remaining = async () => (await pool.query<{ n: number }>(`select count(*)::int as n from dead_letter_states where id > $1 and status <> 'SUCCEEDED'`, [HISTORY_ROWS])).rows[0]!.n;
  for (let run = 1; run <= RUNS; run++) {
    for (const n of PROCESSES) {
      await seedDueEvents(pool, EVENTS, HISTORY_ROWS);
      const workers = Array.from({ length: n }, (_, i) => fork(new URL('./retryScaleWorker.ts', import.meta.url), {
        env: { ...process.env, BENCH_WORKER_DATABASE_URL: dbUrl, BENCH_WORKER_ID: `scale-${i + 1}` },
      }));
      try {
        await Promise.all(workers.map(message));
        const backends = async () => (await pool.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()')).rows.map((r) => r.pid);
        const cpuBefore = cpuSecondsOf(await backends());
        const started = performance.now();
        for (const w of workers) w.send('go');
        while ((await remaining()) > 0) await sleep(POLL_MS);
        const seconds = (performance.now() - started) / 1000;
        const cpuAfter = cpuSecondsOf(await backends());
        const dbCores = [...cpuAfter].reduce((sum, [pid, used]) => sum + used - (cpuBefore.get(pid) ?? 0), 0) / seconds;
        const counts = await Promise.all(workers.map(async (w) => {
          const reply = message(w);
          w.send('stop');
          return ((await reply) as { delivered: number }).delivered;
        }));
        const twice = (await pool.query<{ n: number }>(`
          select count(*)::int as n from (select dead_letter_id from delivery_attempts where outcome = 'SUCCEEDED'
           group by dead_letter_id having count(*) > 1) d`)).rows[0]!.n;
        const delivered = counts.reduce((a, b) => a + b, 0);
        const result = { eventsPerSecond: EVENTS / seconds, shares: counts.map((c) => c / delivered), duplicates: delivered - EVENTS + twice, dbCores };
        results.get(n)!.push(result);
        console.log(`run ${run}, ${n} process(es): ${EVENTS} events in ${seconds.toFixed(2)} s = ${Math.round(result.eventsPerSecond)} events/s; ` +
          `shares ${result.shares.map((s) => `${Math.round(s * 100)}%`).join(' / ')}; duplicates ${result.duplicates}; PostgreSQL ${dbCores.toFixed(2)} cores`);
      } finally {
        for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const base = median(results.get(PROCESSES[0]!)!.map((r) => r.eventsPerSecond));
  const bars: Record<number, number> = { 2: 1.6, 3: 2.0 };
  console.log(`\n${EVENTS} events${HISTORY_ROWS ? ` behind ${HISTORY_ROWS} finished ones` : ''}, median of ${RUNS} run(s); this machine has ${(await import('node:os')).cpus().length} cores for PostgreSQL and the workers together`);
  console.log('| processes | events/s | × one process | bar | per-process share | duplicates | PostgreSQL CPU (cores) |');
  console.log('|---:|---:|---:|---|---|---:|---:|');
  for (const [n, rs] of results) {
    const eps = median(rs.map((r) => r.eventsPerSecond));
    const bar = bars[n] ? `≥ ${bars[n]}× ${eps / base >= bars[n]! ? 'met' : 'NOT met'}` : '';
    const shares = Array.from({ length: n }, (_, i) => `${Math.round(median(rs.map((r) => r.shares[i]!)) * 100)}%`).join(' / ');
    console.log(`| ${n} | ${Math.round(eps)} | ${(eps / base).toFixed(2)} | ${bar} | ${shares} | ${rs.reduce((a, r) => a + r.duplicates, 0)} | ${median(rs.map((r) => r.dbCores)).toFixed(2)} |`);
  }
  if ([...results.values()].some((rs) => rs.some((r) => r.duplicates !== 0))) throw new Error('events were delivered more than once');
} finally {
  await pool.end();
  await dropDatabase(adminUrl, name);
}
