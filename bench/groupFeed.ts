// npm run bench:groups:feed — errorGroupChanged's commit-to-client latency: the service as its own
// process, one SSE subscriber of errorGroupChanged, and a load of BENCH_RATE single-row INSERTs a
// second (autocommit, 4 connections) into LOAD_GROUPS groups, so folds and COUNTS_CHANGED run all
// along; every PROBE_EVERY_MS one more INSERT opens a group of its own, and the sample is its COMMIT
// → its CREATED arriving (the fold delay included, as a user sees it). BENCH_SECONDS (default 20) of
// load. Prints p50/p99 of the probes and how many group changes arrived. Written to compare the two
// designs of issue 33 item 5 (a second feed for groups vs the one feed) back to back: run the same
// file against each tree. BENCH_ADMIN_URL (or TEST_DATABASE_URL) names an admin database; a scratch
// database is created and dropped.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { startServiceProcess } from './serviceProcess.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import { subscribeSse } from '../test/helpers/sse.ts';

const adminUrl = process.env.BENCH_ADMIN_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const rate = Number(process.env.BENCH_RATE ?? 200);
const seconds = Number(process.env.BENCH_SECONDS ?? 20);
const loadGroups = Number(process.env.LOAD_GROUPS ?? 20);
const probeEveryMs = Number(process.env.PROBE_EVERY_MS ?? 100);

type Change = { errorGroupChanged: { kind: string; group: { eventType: string } } };
const INSERT = `insert into dead_letters (event_type, error_kind, error_message) values ($1, 'TIMEOUT', 'timed out')`;
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;

const name = `lazarus_bench_${randomBytes(4).toString('hex')}`;
const databaseUrl = await createDatabase(adminUrl, name);
let service: { url: string; stop: () => Promise<void> } | null = null;
const pool = new pg.Pool({ connectionString: databaseUrl, max: 5 });
try {
  await migrate(databaseUrl);
  service = await startServiceProcess(databaseUrl);
  const sub = await subscribeSse<Change>(`${service.url}/graphql`, 'subscription { errorGroupChanged { kind group { eventType } } }');
  const committed = new Map<string, number>();
  const latencies: number[] = [];
  const kinds: Record<string, number> = {};
  let reading = true;
  const reader = (async () => {
    while (reading) {
      const m = await sub.next(60_000).catch(() => null);
      if (!m) continue;
      const at = performance.now();
      const change = m.data?.errorGroupChanged;
      if (!change) throw new Error(`unexpected message: ${JSON.stringify(m).slice(0, 300)}`);
      kinds[change.kind] = (kinds[change.kind] ?? 0) + 1;
      const sent = committed.get(change.group.eventType);
      if (change.kind === 'CREATED' && sent !== undefined) latencies.push(at - sent);
    }
  })();
  const started = performance.now();
  const until = started + seconds * 1000;
  let inserted = 0;
  const load = Array.from({ length: 4 }, async (_, c) => {
    for (let i = c; performance.now() < until; i += 4) {
      const due = started + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      await pool.query(INSERT, [`load.${i % loadGroups}`]);
      inserted += 1;
    }
  });
  let probes = 0;
  const probe = (async () => {
    while (performance.now() < until) {
      await new Promise((r) => setTimeout(r, probeEveryMs));
      const eventType = `probe.${probes++}`;
      await pool.query(INSERT, [eventType]);
      committed.set(eventType, performance.now());
    }
  })();
  await Promise.all([...load, probe]);
  // Let the last probes arrive.
  for (const deadline = performance.now() + 10_000; latencies.length < probes && performance.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
  reading = false;
  sub.close();
  await reader.catch(() => {});
  console.log(JSON.stringify({
    achievedRate: Math.round(inserted / seconds), probes, arrived: latencies.length,
    p50Ms: +percentile(latencies, 50).toFixed(1), p99Ms: +percentile(latencies, 99).toFixed(1), kinds,
  }));
  if (latencies.length < probes) process.exitCode = 1;
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await pool.end();
  await service?.stop();
  await dropDatabase(adminUrl, name);
}
