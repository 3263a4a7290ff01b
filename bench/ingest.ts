// npm run bench:ingest — write-side throughput, all in one run against one PostgreSQL:
//  1. 50,000 events (~3 KB each) through recordDeadLetters (batches of 500, in-process yoga.fetch)
//     vs the same rows as multi-row INSERTs through pg, triggers on in both, one connection each.
//  2. Bulk requeue of 100,000 rows by filter (domain requeue, no throttle) vs one SQL UPDATE.
//  3. Plain SQL INSERT cost (bench/plainInsertCost.ts): the same 500-row INSERT into dead_letters
//     and into a bare table of the same columns, statement by statement in turn, for rows without
//     and with a ≈ 1.5 KB stack; PLAIN_ROUNDS rounds (default 5) of PLAIN_STATEMENTS INSERTs per
//     target (default 4). BEFORE_MIGRATION=<folder name> adds dead_letters in a second scratch
//     database migrated only to the migrations before that one: what it bought, in the same run.
//  4. Many producers, one event per transaction: CONCURRENT_CONNECTIONS (default 16) connections
//     INSERT single rows (autocommit) for CONCURRENT_SECONDS (default 10), with the change feed's
//     NOTIFY hints on and with `lazarus.change_hints = 'off'`, in turn, CONCURRENT_ROUNDS (default 2)
//     rounds each, best kept. PostgreSQL holds a lock through the commit of every transaction that
//     sent a NOTIFY, so hinted commits cannot share a WAL flush.
// BENCH_DATABASE_URL (or TEST_DATABASE_URL) names an admin database; scratch databases are created
// and dropped. Default postgresql://postgres@127.0.0.1:5432/postgres. EVENTS / REQUEUE_ROWS override
// sizes; PARTS=3 (or 1,3 …) runs only those parts (default 1,2,3,4).
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import pg from 'pg';
import { pino } from 'pino';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { requeue } from '../src/domain/operatorActions.ts';
import { stamp } from '../src/db/sql/stamp.ts';
import { createGraphQLServer } from '../src/api/server.ts';
import { createDatabase, dropDatabase, withDatabase } from '../test/helpers/databases.ts';
import { copyOfMigrations } from '../test/helpers/migrations.ts';
import { BARE_TABLE, createBareTable, measurePlainInsertCost, summarizePlainInsertCost, type PlainInsertTarget } from './plainInsertCost.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.EVENTS ?? 50_000);
const BATCH = 500;
const REQUEUE_ROWS = Number(process.env.REQUEUE_ROWS ?? 100_000);
const ROUNDS = 2;
const PARTS = new Set((process.env.PARTS ?? '1,2,3,4').split(',').map(Number));
const CONCURRENT_CONNECTIONS = Number(process.env.CONCURRENT_CONNECTIONS ?? 16);
const CONCURRENT_SECONDS = Number(process.env.CONCURRENT_SECONDS ?? 10);
const CONCURRENT_ROUNDS = Number(process.env.CONCURRENT_ROUNDS ?? 2);
const PLAIN_ROUNDS = Number(process.env.PLAIN_ROUNDS ?? 5);
const PLAIN_STATEMENTS = Number(process.env.PLAIN_STATEMENTS ?? 4);
const BEFORE_MIGRATION = process.env.BEFORE_MIGRATION;
const logger = pino({ level: 'silent' });

const name = `lazarus_bench_${randomBytes(4).toString('hex')}`;
const url = withDatabase(adminUrl, name);
const beforeName = `${name}_before`;
await createDatabase(adminUrl, name);
if (BEFORE_MIGRATION) await createDatabase(adminUrl, beforeName);
try {
  await migrate(url, { logger });
  const api = createDb(url, { poolMax: 1, acquireTimeoutMs: 10_000, statementTimeoutMs: 600_000, applicationName: 'bench' });
  const raw = new pg.Client({ connectionString: url });
  raw.on('error', () => {}); // the final drop database (with force) ends this connection
  await raw.connect();
  const yoga = createGraphQLServer({ db: api.db, logger, graphiql: false, authenticate: () => ({ name: 'bench', role: 'admin' }), isReady: async () => true });

  const filler = 'x'.repeat(2_600);
  const event = (i: number, run: string) => ({
    eventType: 'order.placed', queue: 'orders', source: 'checkout', dedupeKey: `${run}-${i}`,
    payload: { orderId: i, customer: `c-${i % 977}`, lines: [{ sku: `SKU-${i % 101}`, qty: 1 + (i % 5) }], note: filler },
    headers: { topic: 'orders', partition: i % 12, offset: i },
    error: { kind: 'DOWNSTREAM_API', message: `HTTP 503 from inventory-service (request ${i})` },
  });
  const rowBytes = JSON.stringify(event(1, 'x')).length;

  const viaGraphQL = async (run: string) => {
    const query = `mutation ($inputs: [RecordDeadLetterInput!]!) { recordDeadLetters(inputs: $inputs) { __typename ... on RecordedDeadLetters { createdCount } } }`;
    for (let start = 0; start < EVENTS; start += BATCH) {
      const inputs = Array.from({ length: Math.min(BATCH, EVENTS - start) }, (_, k) => event(start + k, run));
      const response = await yoga.fetch('http://bench/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables: { inputs } }) });
      const body = (await response.json()) as { data?: { recordDeadLetters?: { createdCount?: number } } };
      if (body.data?.recordDeadLetters?.createdCount !== inputs.length) throw new Error(`batch failed: ${JSON.stringify(body).slice(0, 300)}`);
    }
  };
  const viaPg = async (run: string) => {
    for (let start = 0; start < EVENTS; start += BATCH) {
      const n = Math.min(BATCH, EVENTS - start);
      const values: unknown[] = [];
      const tuples: string[] = [];
      for (let k = 0; k < n; k++) {
        const e = event(start + k, run);
        const b = values.length;
        values.push(e.eventType, e.queue, e.source, e.dedupeKey, JSON.stringify(e.payload), JSON.stringify(e.headers), e.error.kind, e.error.message);
        tuples.push(`($${b + 1},$${b + 2},$${b + 3},$${b + 4},$${b + 5}::jsonb,$${b + 6}::jsonb,$${b + 7}::"ErrorKind",$${b + 8})`);
      }
      await raw.query(`insert into dead_letters (event_type, queue, source, dedupe_key, payload, headers, error_kind, error_message) values ${tuples.join(',')}`, values);
    }
  };

  const reset = async () => {
    await raw.query('truncate dead_letters, dead_letter_actions, delivery_attempts, redrives, redrive_items, redrive_actions');
    await raw.query('vacuum analyze dead_letters');
  };
  const ingest: { pg: number[]; graphql: number[] } = { pg: [], graphql: [] };
  for (let round = 0; round < (PARTS.has(1) ? ROUNDS : 0); round++) {
    await reset();
    ingest.pg.push(await timed(() => viaPg(`pg${round}`)));
    await reset();
    ingest.graphql.push(await timed(() => viaGraphQL(`gql${round}`)));
  }
  const rate = (ms: number) => Math.round(EVENTS / (ms / 1000));
  const bestPg = Math.min(...ingest.pg);
  const bestGql = Math.min(...ingest.graphql);

  await reset();
  if (PARTS.has(2)) await raw.query(`insert into dead_letters (event_type, queue, payload, error_kind, error_message, status, attempts)
                   select 'bench.requeue', 'bulk', jsonb_build_object('i', i), 'TIMEOUT', 'timed out', 'EXHAUSTED', 10
                     from generate_series(1, $1::int) i`, [REQUEUE_ROWS]);
  await raw.query('vacuum analyze dead_letters');
  const back = async () => {
    await raw.query(`update dead_letter_states set status = 'EXHAUSTED', attempts = 10 where event_type = 'bench.requeue'`);
    await raw.query('truncate dead_letter_actions');
    await raw.query('vacuum analyze dead_letters');
  };
  const bulk: { sql: number[]; domain: number[] } = { sql: [], domain: [] };
  for (let round = 0; round < (PARTS.has(2) ? ROUNDS : 0); round++) {
    bulk.sql.push(await timed(async () => {
      // With the row stamp, as Lazarus's own statements write it: without it, the state table's
      // update trigger stamps every row with a second update (what an UPDATE from psql costs).
      const r = await raw.query(`update dead_letter_states s set status = 'PENDING', next_attempt_at = now(), attempts = 0, ${stamp('s').sql}
                                  where event_type = 'bench.requeue' and status in ('PENDING', 'EXHAUSTED')`);
      if (r.rowCount !== REQUEUE_ROWS) throw new Error(`sql requeued ${r.rowCount}`);
    }));
    await back();
    bulk.domain.push(await timed(async () => {
      const r = await requeue(api.db, 'bench', { selection: { filter: { eventTypes: ['bench.requeue'] } }, dryRun: false, at: null, resetAttempts: true, force: false, reason: 'bench' });
      if (r.count !== REQUEUE_ROWS) throw new Error(`domain requeued ${r.count}`);
    }));
    await back();
  }
  const bestSql = Math.min(...bulk.sql);
  const bestDomain = Math.min(...bulk.domain);

  const plain = [];
  if (PARTS.has(3)) {
    await reset();
    await createBareTable(raw);
    const bare = new pg.Client({ connectionString: url });
    bare.on('error', () => {});
    await bare.connect();
    const targets: PlainInsertTarget[] = [{ name: 'deadLetters', client: raw, table: 'dead_letters' }, { name: 'bareTable', client: bare, table: BARE_TABLE }];
    if (BEFORE_MIGRATION) {
      const beforeUrl = withDatabase(adminUrl, beforeName);
      const migrationsDir = await copyOfMigrations((entry) => entry < BEFORE_MIGRATION);
      await migrate(beforeUrl, { logger, migrationsDir });
      await rm(migrationsDir, { recursive: true });
      const before = new pg.Client({ connectionString: beforeUrl });
      before.on('error', () => {});
      await before.connect();
      targets.push({ name: `deadLettersBefore_${BEFORE_MIGRATION}`, client: before, table: 'dead_letters' });
    }
    for (const shape of ['event', 'stack'] as const) {
      const totals = await measurePlainInsertCost({ targets, shape, rounds: PLAIN_ROUNDS, statements: PLAIN_STATEMENTS });
      plain.push({ shape, rowsPerTarget: totals.rows, againstBareTable: summarizePlainInsertCost(totals, 'bareTable') });
    }
    for (const t of targets.slice(1)) await t.client.end();
  }

  const concurrent: Record<'hintsOn' | 'hintsOff', number[]> = { hintsOn: [], hintsOff: [] };
  if (PARTS.has(4)) {
    await reset();
    for (let round = 0; round < CONCURRENT_ROUNDS; round++) {
      for (const mode of ['hintsOn', 'hintsOff'] as const) {
        concurrent[mode].push(await singleRowInserts(url, mode === 'hintsOff' ? { options: '-c lazarus.change_hints=off' } : {}));
        await reset();
      }
    }
  }

  const report = {
    postgres: (await raw.query<{ v: string }>('select version() as v')).rows[0]!.v.split(' on ')[0],
    loadAverage1m: Number(loadavg()[0]!.toFixed(2)),
    ingest: PARTS.has(1) && {
      events: EVENTS, batch: BATCH, approxRowBytes: rowBytes,
      pgInsertMs: ingest.pg.map(Math.round), recordDeadLettersMs: ingest.graphql.map(Math.round),
      bestPgRowsPerSec: rate(bestPg), bestRecordDeadLettersRowsPerSec: rate(bestGql),
      recordDeadLettersShareOfPgRate: Number((bestPg / bestGql).toFixed(2)),
    },
    bulkRequeue: PARTS.has(2) && {
      rows: REQUEUE_ROWS, sqlUpdateMs: bulk.sql.map(Math.round), domainRequeueMs: bulk.domain.map(Math.round),
      domainTimeOverSqlTime: Number((bestDomain / bestSql).toFixed(2)),
    },
    plainSqlInsert: PARTS.has(3) && plain,
    singleRowProducers: PARTS.has(4) && {
      connections: CONCURRENT_CONNECTIONS, seconds: CONCURRENT_SECONDS,
      hintsOnRowsPerSec: concurrent.hintsOn, hintsOffRowsPerSec: concurrent.hintsOff,
      bestHintsOffOverHintsOn: Number((Math.max(...concurrent.hintsOff) / Math.max(...concurrent.hintsOn)).toFixed(2)),
    },
  };
  console.log(JSON.stringify(report, null, 2));
  await raw.end();
  await api.close();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await dropDatabase(adminUrl, name);
  if (BEFORE_MIGRATION) await dropDatabase(adminUrl, beforeName);
}

/** Rows per second that CONCURRENT_CONNECTIONS connections insert one at a time, autocommit. */
async function singleRowInserts(databaseUrl: string, connection: pg.ClientConfig): Promise<number> {
  const clients = await Promise.all(Array.from({ length: CONCURRENT_CONNECTIONS }, async () => {
    const client = new pg.Client({ connectionString: databaseUrl, ...connection });
    client.on('error', () => {});
    await client.connect();
    return client;
  }));
  const until = performance.now() + CONCURRENT_SECONDS * 1000;
  const start = performance.now();
  const counts = await Promise.all(clients.map(async (client, c) => {
    let n = 0;
    while (performance.now() < until) {
      await client.query(`insert into dead_letters (event_type, queue, payload, error_kind, error_message) values ('order.placed', 'orders', $1, 'DOWNSTREAM_API', 'HTTP 503 from inventory-service')`, [`{"orderId": ${c * 1_000_000 + n}}`]);
      n += 1;
    }
    return n;
  }));
  const seconds = (performance.now() - start) / 1000;
  await Promise.all(clients.map((client) => client.end()));
  return Math.round(counts.reduce((a, b) => a + b, 0) / seconds);
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}
