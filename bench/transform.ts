// npm run bench:transform — payload transforms at the size the issue sets (10,000 events): how long a
// preview, an apply (one transaction: the time it holds the live feed's horizon) and an undo take,
// and that apply + undo leave payload::text as it was. ~1 KB payloads, a one-op JSON Patch that
// changes two events in three. BENCH_DATABASE_URL (or TEST_DATABASE_URL) names an admin database; a
// scratch database is created and dropped. EVENTS (default 10,000) and ROUNDS (default 3) override.
import { loadavg } from 'node:os';
import { pino } from 'pino';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from '../test/helpers/databases.ts';
import { parsePayloadPatch } from '../src/domain/payloadPatch.ts';
import { applyTransform, previewTransform, undoTransform } from '../src/domain/payloadTransforms.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.EVENTS ?? 10_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

const name = randomDatabaseName('lazarus_bench');
const url = await createDatabase(adminUrl, name);
const handle = createDb(url, { poolMax: 4, acquireTimeoutMs: 5_000, statementTimeoutMs: 60_000, applicationName: 'bench-transform' });
try {
  await migrate(url, { logger: pino({ level: 'silent' }) });
  await handle.pool.query(`insert into dead_letters (event_type, payload, status, error_message)
    select 'bench.t', jsonb_build_object('n', i, 'currency', case when i % 3 = 0 then 'EUR' else 'usd' end,
                                          'amount', (i || '.50')::numeric, 'note', repeat('x', 900)),
           'EXHAUSTED', 'HTTP 422' from generate_series(1, $1::int) as i`, [EVENTS]);
  const text = async () => (await handle.pool.query<{ s: string }>(`select md5(string_agg(id || payload::text, '|' order by id)) as s from dead_letters`)).rows[0]!.s;
  const start = await text();
  const request = { filter: { eventTypes: ['bench.t'] }, patch: parsePayloadPatch({ patch: [{ op: 'replace', path: '/currency', value: 'EUR' }] }) };
  const time = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
    const t0 = performance.now();
    const r = await f();
    return [r, performance.now() - t0];
  };
  const rows: string[][] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const [preview, previewMs] = await time(() => previewTransform(handle.db, { ...request, sample: 5 }));
    const [id, applyMs] = await time(() => applyTransform(handle.db, 'bench', { ...request, reason: null, requeue: false, skipFailing: false }));
    const [undo, undoMs] = await time(() => undoTransform(handle.db, 'bench', { id, reason: null }));
    const identical = (await text()) === start;
    if (!identical) process.exitCode = 1;
    rows.push([String(round), String(preview.changed), previewMs.toFixed(0), applyMs.toFixed(0), undoMs.toFixed(0), String(undo.restored), identical ? 'yes' : 'NO']);
  }
  console.log(`payload transforms, ${EVENTS} events (~1 KB payloads), load ${loadavg()[0]!.toFixed(2)}`);
  console.log('| round | changed | preview ms | apply ms (one transaction) | undo ms | restored | payload::text identical after undo |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
} finally {
  await handle.close();
  await dropDatabase(adminUrl, name);
}
