// npm run bench:retry:scale — the same backlog drained by 1, 2 and 3 retry processes on one
// database. Each process is bench/retryScaleWorker.ts: the retry loop as the service runs it
// (batch 100, concurrency 10, pool of 4) with a no-op in-process handler. Per process count: drain
// time (from 'go' until no event is left unsucceeded, polled every 50 ms), events/s, each process's
// share, duplicates (deliveries beyond one per event, by the handlers' counts and by SUCCEEDED
// attempt rows: both must be 0), and CPU over the drain window, in cores, from /proc/<pid>/stat
// (the server must run on this machine): the server processes of the retry processes' connections
// (background writers, other databases and the bench's own 50 ms poll left out: its count scans the
// backlog, ~5 ms of CPU each, ~0.07 cores, printed per run) and the retry processes, each also per
// event; their sum against os.availableParallelism(); and the whole machine's busy time (/proc/stat,
// every process: other work on a shared machine shows there). A row counts as saturated when
// PostgreSQL + the retry processes reach 90% of the cores.
// BENCH_EVENTS (default 50,000), BENCH_RUNS (default 3, medians), BENCH_PROCESSES (default 1,2,3),
// BENCH_DATABASE_URL (admin URL; a scratch database is created and dropped).
// BENCH_HISTORY_ROWS (default 0): that many finished events (80% SUCCEEDED, 10% RESOLVED, 10%
// DISCARDED, the read bench's shapes, bench/syntheticDeadLetters.ts) are bulk-loaded first
// (bench/bulkLoadDeadLetters.ts) and stay behind every backlog, so every claim and completion
// works against a table and indexes of that size. Each seed then deletes only the last backlog.
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { pino } from 'pino';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import { seedDueEvents } from './seedDueEvents.ts';
import { bulkLoadDeadLetters, verifyDerivedTables } from './bulkLoadDeadLetters.ts';
import { cpuMsOf, TICK_MS } from './triggerCost.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PROCESSES = (process.env.BENCH_PROCESSES ?? '1,2,3').split(',').map(Number);
const HISTORY_ROWS = Number(process.env.BENCH_HISTORY_ROWS ?? 0);
const POLL_MS = 50;
const CORES = availableParallelism();
const SATURATED = 0.9; // of the cores: USER_HZ ticks and the 50 ms poll blur the last few percent

/** CPU milliseconds used so far by each of these processes (those that ended meanwhile are left out). */
async function cpuMsByPid(pids: number[]): Promise<Map<number, number>> {
  const used = new Map<number, number>();
  for (const pid of pids) {
    const ms = await cpuMsOf(pid);
    if (ms !== null) used.set(pid, ms);
  }
  return used;
}
/** CPU milliseconds used between two readings; a process first seen in `after` counts whole. */
const cpuMsBetween = (before: Map<number, number>, after: Map<number, number>) =>
  [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0);
/** Busy CPU milliseconds of the whole machine so far, every process (/proc/stat: all but idle and iowait). */
function machineBusyMs(): number {
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  return (ticks.reduce((a, b) => a + b, 0) - ticks[3]! - ticks[4]!) * TICK_MS;
}

const message = (child: ChildProcess) => new Promise<unknown>((resolve, reject) => {
  child.once('message', resolve);
  child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
});

const name = `lazarus_scale_${process.pid}`;
const dbUrl = await createDatabase(adminUrl, name);
const POLL_APP = 'bench-scale-poll';
const pool = new pg.Pool({ connectionString: dbUrl, max: 2, application_name: POLL_APP });
pool.on('error', () => {});
interface Result {
  eventsPerSecond: number; shares: number[]; duplicates: number;
  dbCores: number; dbUsPerEvent: number; workerCores: number; workerUsPerEvent: number; machineCores: number; pollCores: number;
}
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
        /** This database's server processes: the retry processes' connections, or the bench's own. */
        const backends = async (poll: boolean) => (await pool.query<{ pid: number }>(
          `select pid from pg_stat_activity where datname = current_database() and (application_name = $1) = $2`, [POLL_APP, poll])).rows.map((r) => r.pid);
        const workerPids = workers.map((w) => w.pid!);
        const dbBefore = await cpuMsByPid(await backends(false));
        const pollBefore = await cpuMsByPid(await backends(true));
        const workersBefore = await cpuMsByPid(workerPids);
        const machineBefore = machineBusyMs();
        const started = performance.now();
        for (const w of workers) w.send('go');
        while ((await remaining()) > 0) {
          const dead = workers.find((w) => w.exitCode !== null || w.signalCode !== null);
          if (dead) throw new Error(`worker ${dead.pid} exited (${dead.signalCode ?? dead.exitCode}) with events left`);
          await sleep(POLL_MS);
        }
        const seconds = (performance.now() - started) / 1000;
        const machineMs = machineBusyMs() - machineBefore;
        const workerMs = cpuMsBetween(workersBefore, await cpuMsByPid(workerPids));
        const dbMs = cpuMsBetween(dbBefore, await cpuMsByPid(await backends(false)));
        const pollMs = cpuMsBetween(pollBefore, await cpuMsByPid(await backends(true)));
        const counts = await Promise.all(workers.map(async (w) => {
          const reply = message(w);
          w.send('stop');
          return ((await reply) as { delivered: number }).delivered;
        }));
        const twice = (await pool.query<{ n: number }>(`
          select count(*)::int as n from (select dead_letter_id from delivery_attempts where outcome = 'SUCCEEDED'
           group by dead_letter_id having count(*) > 1) d`)).rows[0]!.n;
        const delivered = counts.reduce((a, b) => a + b, 0);
        const result: Result = {
          eventsPerSecond: EVENTS / seconds, shares: counts.map((c) => c / delivered), duplicates: delivered - EVENTS + twice,
          dbCores: dbMs / 1000 / seconds, dbUsPerEvent: dbMs * 1000 / EVENTS,
          workerCores: workerMs / 1000 / seconds, workerUsPerEvent: workerMs * 1000 / EVENTS,
          machineCores: machineMs / 1000 / seconds, pollCores: pollMs / 1000 / seconds,
        };
        results.get(n)!.push(result);
        console.log(`run ${run}, ${n} process(es): ${EVENTS} events in ${seconds.toFixed(2)} s = ${Math.round(result.eventsPerSecond)} events/s; ` +
          `shares ${result.shares.map((s) => `${Math.round(s * 100)}%`).join(' / ')}; duplicates ${result.duplicates}; ` +
          `PostgreSQL ${result.dbCores.toFixed(2)} cores (${Math.round(result.dbUsPerEvent)} µs/event), ` +
          `workers ${result.workerCores.toFixed(2)} cores (${Math.round(result.workerUsPerEvent)} µs/event), the bench's poll ${result.pollCores.toFixed(2)} cores of PostgreSQL, ` +
          `machine ${result.machineCores.toFixed(2)} of ${CORES} cores busy`);
      } finally {
        for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const base = median(results.get(PROCESSES[0]!)!.map((r) => r.eventsPerSecond));
  const bars: Record<number, number> = { 2: 1.6, 3: 2.0 };
  console.log(`\n${EVENTS} events${HISTORY_ROWS ? ` behind ${HISTORY_ROWS} finished ones` : ''}, median of ${RUNS} run(s); ` +
    `this machine has ${CORES} cores for PostgreSQL and the workers together; saturated: PostgreSQL + workers ≥ ${SATURATED * 100}% of them`);
  console.log('| processes | events/s | × one process | bar | per-process share | duplicates | PostgreSQL CPU (cores) | PostgreSQL µs/event ' +
    `| workers CPU (cores) | workers µs/event | PostgreSQL + workers (of ${CORES} cores) | machine busy, every process (cores) | saturated |`);
  console.log('|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const [n, rs] of results) {
    const m = (pick: (r: Result) => number) => median(rs.map(pick));
    const eps = m((r) => r.eventsPerSecond);
    const bar = bars[n] ? `≥ ${bars[n]}× ${eps / base >= bars[n]! ? 'met' : 'NOT met'}` : '';
    const shares = Array.from({ length: n }, (_, i) => `${Math.round(m((r) => r.shares[i]!) * 100)}%`).join(' / ');
    const ours = m((r) => r.dbCores + r.workerCores);
    const machine = m((r) => r.machineCores);
    // The rest of the machine: other work on a shared machine, and this bench's own poll (~0.1 cores with its backend).
    const saturated = ours >= SATURATED * CORES ? 'yes' : machine >= SATURATED * CORES ? `yes, with ${(machine - ours).toFixed(2)} cores of other work` : 'no';
    console.log(`| ${n} | ${Math.round(eps)} | ${(eps / base).toFixed(2)} | ${bar} | ${shares} | ${rs.reduce((a, r) => a + r.duplicates, 0)} ` +
      `| ${m((r) => r.dbCores).toFixed(2)} | ${Math.round(m((r) => r.dbUsPerEvent))} | ${m((r) => r.workerCores).toFixed(2)} | ${Math.round(m((r) => r.workerUsPerEvent))} ` +
      `| ${ours.toFixed(2)} (${Math.round((ours / CORES) * 100)}%) | ${machine.toFixed(2)} | ${saturated} |`);
  }
  if ([...results.values()].some((rs) => rs.some((r) => r.duplicates !== 0))) throw new Error('events were delivered more than once');
} finally {
  await pool.end();
  await dropDatabase(adminUrl, name);
}
