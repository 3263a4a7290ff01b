// npm run bench:transform — payload transforms at the size the issue sets (10,000 events): how long a
// preview, the apply mutation (validation pass + recording the targets), the apply itself and the undo
// take, how fast the apply goes, and how far behind the live feed falls meanwhile — for the apply in
// committed batches of 500 (what the runner does) against the same work as ONE transaction (the
// Session 13 shape, as a baseline in the same run). Feed lag: a probe inserts an event every 20 ms and
// times how long until the change horizon (what the live feed reads below) passes its xid. Checks
// that apply + undo leave payload::text as it was. ~1 KB payloads, a one-op JSON Patch that changes
// two events in three. BENCH_DATABASE_URL (or TEST_DATABASE_URL) names an admin database; a scratch
// database is created and dropped. EVENTS (default 10,000) and ROUNDS (default 2) override.
import { loadavg } from 'node:os';
import { pino } from 'pino';
import { createDb, type Db } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { claimTransform } from '../src/db/sql/claimTransform.ts';
import { readChangeHorizon } from '../src/db/sql/readChangeHorizon.ts';
import { parsePayloadPatch } from '../src/domain/payloadPatch.ts';
import { applyTransform, previewTransform, undoTransform } from '../src/domain/payloadTransforms.ts';
import { runTransformBatch, TRANSFORM_BATCH } from '../src/domain/transformBatches.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from '../test/helpers/databases.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.EVENTS ?? 10_000);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const PROBE_EVERY_MS = 20;
// At most TRANSFORM_BATCH events the mutation applies them itself and leaves no batches to time.
if (EVENTS <= TRANSFORM_BATCH) throw new Error(`EVENTS must be above ${TRANSFORM_BATCH} (one batch), got ${EVENTS}`);

const name = randomDatabaseName('lazarus_bench');
const url = await createDatabase(adminUrl, name);
const handle = createDb(url, { poolMax: 4, acquireTimeoutMs: 5_000, statementTimeoutMs: 60_000, applicationName: 'bench-transform' });
const probeHandle = createDb(url, { poolMax: 2, acquireTimeoutMs: 5_000, statementTimeoutMs: 60_000, applicationName: 'bench-transform-probe' });

/** Inserts a probe event every PROBE_EVERY_MS and records how long each waits for the change horizon. */
function startFeedProbe(db: Db) {
  const lags: number[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const [row] = await db.$queryRaw<{ xid: string }[]>`insert into dead_letters (event_type, payload, status) values ('bench.probe', '{}', 'SUCCEEDED') returning pg_current_xact_id()::text as xid`;
      const committed = performance.now();
      while ((await readChangeHorizon(db)) <= BigInt(row!.xid)) await new Promise((r) => setTimeout(r, 2));
      lags.push(performance.now() - committed);
      await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    const sorted = [...lags].sort((a, b) => a - b);
    return { max: sorted.at(-1) ?? 0, p50: sorted[Math.floor(sorted.length / 2)] ?? 0, probes: sorted.length };
  };
}

const time = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const r = await f();
  return [r, performance.now() - t0];
};

/** Drives a RUNNING or UNDOING transform to its end as the runner does, `limit` rows per transaction. */
async function drive(db: Db, id: bigint, limit: number): Promise<number> {
  const claim = await claimTransform(db, { owner: 'bench', leaseSeconds: 300 });
  if (claim?.id !== id) throw new Error(`expected to claim transform ${id}`);
  let batches = 0;
  for (;;) {
    const r = await runTransformBatch(db, { id, owner: 'bench', leaseSeconds: 300, limit });
    batches++;
    if (!r.held) throw new Error('lost the transform');
    if (r.completed) return batches;
  }
}

try {
  await migrate(url, { logger: pino({ level: 'silent' }) });
  await handle.pool.query(`insert into dead_letters (event_type, payload, status, error_message)
    select 'bench.t', jsonb_build_object('n', i, 'currency', case when i % 3 = 0 then 'EUR' else 'usd' end,
                                          'amount', (i || '.50')::numeric, 'note', repeat('x', 900)),
           'EXHAUSTED', 'HTTP 422' from generate_series(1, $1::int) as i`, [EVENTS]);
  const text = async () => (await handle.pool.query<{ s: string }>(`select md5(string_agg(id || payload::text, '|' order by id)) as s from dead_letters where event_type = 'bench.t'`)).rows[0]!.s;
  const start = await text();
  const request = { filter: { eventTypes: ['bench.t'] }, patch: parsePayloadPatch({ patch: [{ op: 'replace', path: '/currency', value: 'EUR' }] }) };
  const rows: string[][] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [mode, limit] of [['one transaction (baseline)', EVENTS], [`batches of ${TRANSFORM_BATCH}`, TRANSFORM_BATCH]] as const) {
      const [preview, previewMs] = await time(() => previewTransform(handle.db, { ...request, sample: 5 }));
      const stopMutationProbe = startFeedProbe(probeHandle.db);
      const [id, mutationMs] = await time(() => applyTransform(handle.db, 'bench', { ...request, reason: null, requeue: false, skipFailing: false }));
      const mutationLag = await stopMutationProbe();
      const stopApplyProbe = startFeedProbe(probeHandle.db);
      const [batches, applyMs] = await time(() => drive(handle.db, id, limit));
      const applyLag = await stopApplyProbe();
      const [, undoMs] = await time(async () => {
        await undoTransform(handle.db, 'bench', { id, reason: null });
        return drive(handle.db, id, limit);
      });
      const undone = await handle.db.transform.findUniqueOrThrow({ where: { id } });
      const identical = (await text()) === start && undone.status === 'UNDONE';
      if (!identical) process.exitCode = 1;
      rows.push([String(round), mode, String(preview.changed), previewMs.toFixed(0), mutationMs.toFixed(0), mutationLag.max.toFixed(0),
        applyMs.toFixed(0), String(batches), ((EVENTS / applyMs) * 1000).toFixed(0), applyLag.p50.toFixed(0), applyLag.max.toFixed(0), String(applyLag.probes),
        undoMs.toFixed(0), String(undone.restored), identical ? 'yes' : 'NO']);
    }
  }
  console.log(`payload transforms, ${EVENTS} events (~1 KB payloads), load ${loadavg()[0]!.toFixed(2)}`);
  console.log('| round | apply as | changed | preview ms | mutation ms (validate + record) | feed lag max during mutation ms | apply ms | transactions | events/s | feed lag p50 ms | feed lag max ms | probes | undo ms | restored | payload::text identical after undo |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await probeHandle.close();
  await handle.close();
  await dropDatabase(adminUrl, name);
}
