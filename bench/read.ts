// npm run bench:read — seeds BENCH_ROWS (default 1,000,000) realistic dead letters into a fresh
// database `lazarus_bench` on BENCH_ADMIN_URL (default: local PostgreSQL), then reports p50/p95 per
// query shape for the GraphQL request (in-process yoga.fetch) next to hand-written SQL through pg,
// and EXPLAIN of each SQL. A benchmark script, not the service: it reads its own env vars.
// The seed is bench/bulkLoadDeadLetters.ts (10M rows in 9.3 min here after the queue-state split; BENCH_SEED=triggers for
// the old INSERT … SELECT through every trigger), checked against a scan before anything is timed.
//
// The PostGraphile columns are issue #3's do-it-yourself rival: PostGraphile 5 with the
// connection-filter plugin over the same table (bench/postgraphile.ts), asked the same list and
// filter queries (same 50 rows, same order, same 7 columns) through its own in-process fetch, its
// samples alternating with the other two. Before timing, each shape checks that both servers
// return the same ids. Shapes it cannot express (the stats, which need aggregates) show "—".
// BENCH_EXHAUSTED_DAYS and BENCH_SUCCEEDED_DAYS (below, at keepOldest) move the seed's EXHAUSTED or
// SUCCEEDED events to its oldest days.
import pg from 'pg';
import { pino } from 'pino';
import { LOCAL_PRINCIPAL } from '../src/api/auth/principal.ts';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import { createGraphQLServer } from '../src/api/server.ts';
import { createPostGraphileRival } from './postgraphile.ts';
import { timeAlternating } from './timeAlternating.ts';
import { bulkLoadDeadLetters, insertThroughTriggers, verifyDerivedTables } from './bulkLoadDeadLetters.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 40);
const SLOW_ITERATIONS = Number(process.env.BENCH_SLOW_ITERATIONS ?? 10);
// Warm-up rounds before timing a shape: at least 10, at most BENCH_WARMUPS while BENCH_WARMUP_MS last.
const WARMUPS = Number(process.env.BENCH_WARMUPS ?? 10);
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 0);
const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const SKIP_SEED = process.env.BENCH_SKIP_SEED === '1';
const DB_NAME = process.env.BENCH_DB ?? 'lazarus_bench';
// 'bulk' (default): bench/bulkLoadDeadLetters.ts, triggers off and rebuilt set-based, indexes built
// after the load; 'triggers': INSERT … SELECT through every trigger with every index present.
const SEED_PATH = process.env.BENCH_SEED ?? 'bulk';
const SEED_CONNECTIONS = Number(process.env.BENCH_SEED_CONNECTIONS ?? 2);

const url = new URL(ADMIN_URL);
url.pathname = `/${DB_NAME}`;
const BENCH_URL = url.toString();

const NODE = 'id eventType status attempts createdAt error { kind message }';
const SQL_COLS = 'id, event_type, status, attempts, created_at, error_kind, error_message';
const LIST_SQL = (where: string, params: unknown[] = []) => ({
  sql: `select ${SQL_COLS} from dead_letters_current where ${where} order by created_at desc, id desc limit 51`,
  params,
});

// PostGraphile's amber preset names the node ID `id` and the column `rowId`.
const PG_NODE = 'rowId eventType status attempts createdAt errorKind errorMessage';
const PG_LIST = (filter?: string, extra = '') =>
  `{ allDeadLetters(first: 50, orderBy: [CREATED_AT_DESC, ROW_ID_DESC]${filter ? `, filter: ${filter}` : ''}) { ${extra}edges { node { ${PG_NODE} } } } }`;
const PG_ERROR_TEXT = (text: string) =>
  `{ or: [{ errorMessage: { includesInsensitive: ${JSON.stringify(text)} } }, { errorStack: { includesInsensitive: ${JSON.stringify(text)} } }] }`;

interface Shape {
  name: string;
  graphql: string;
  variables?: Record<string, unknown>;
  sql: string;
  params: unknown[];
  /** The same query for PostGraphile, where it can say it. */
  postgraphile?: string;
  iterations?: number;
}

const weekAgo = () => new Date(Date.now() - 7 * 86_400_000).toISOString();
// On a whole UTC hour, so the rollups can answer (see src/domain/statsRollups.ts).
const weekAgoHour = () => new Date(Math.floor((Date.now() - 7 * 86_400_000) / 3_600_000) * 3_600_000).toISOString();
const nextHour = () => new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000).toISOString();

const SHAPES: Shape[] = [
  { name: 'newest 50, no count', graphql: `{ deadLetters(first: 50) { edges { node { ${NODE} } } } }`, ...LIST_SQL('true'), postgraphile: PG_LIST() },
  { name: 'status = EXHAUSTED, 50', graphql: `{ deadLetters(first: 50, filter: { statuses: [EXHAUSTED] }) { edges { node { ${NODE} } } } }`, ...LIST_SQL(`status = 'EXHAUSTED'`), postgraphile: PG_LIST('{ status: { equalTo: EXHAUSTED } }') },
  { name: 'status = SUCCEEDED, 50', graphql: `{ deadLetters(first: 50, filter: { statuses: [SUCCEEDED] }) { edges { node { ${NODE} } } } }`, ...LIST_SQL(`status = 'SUCCEEDED'`), postgraphile: PG_LIST('{ status: { equalTo: SUCCEEDED } }') },
  { name: 'status = EXHAUSTED and eventType, 50', graphql: `{ deadLetters(first: 50, filter: { statuses: [EXHAUSTED], eventTypes: ["invoice.sent"] }) { edges { node { ${NODE} } } } }`, ...LIST_SQL(`status = 'EXHAUSTED' and event_type = $1`, ['invoice.sent']), postgraphile: PG_LIST('{ status: { equalTo: EXHAUSTED }, eventType: { equalTo: "invoice.sent" } }') },
  // A status with a field only dead_letters has. The first is the triage page; in the second the status is common (PENDING, 40%)
  // and the signature rarer (8%), the kind of filter that walks further on the state table than through the signature's index.
  { name: 'status = EXHAUSTED and queue, 50', graphql: `{ deadLetters(first: 50, filter: { statuses: [EXHAUSTED], queues: ["orders"] }) { edges { node { ${NODE} } } } }`, ...LIST_SQL(`status = 'EXHAUSTED' and queue = $1`, ['orders']), postgraphile: PG_LIST('{ status: { equalTo: EXHAUSTED }, queue: { equalTo: "orders" } }') },
  { name: 'status = PENDING and errorSignature, 50', graphql: `{ deadLetters(first: 50, filter: { statuses: [PENDING], errorSignatures: ["schema v3 expected, got object <hex>"] }) { edges { node { ${NODE} } } } }`,
    ...LIST_SQL(`status = 'PENDING' and error_signature = $1`, ['schema v3 expected, got object <hex>']), postgraphile: PG_LIST('{ status: { equalTo: PENDING }, errorSignature: { equalTo: "schema v3 expected, got object <hex>" } }') },
  { name: 'eventType, 50', graphql: `{ deadLetters(first: 50, filter: { eventTypes: ["invoice.sent"] }) { edges { node { ${NODE} } } } }`, ...LIST_SQL(`event_type = $1`, ['invoice.sent']), postgraphile: PG_LIST('{ eventType: { equalTo: "invoice.sent" } }') },
  { name: 'errorText common ("inventory"), 50', graphql: `{ deadLetters(first: 50, filter: { errorText: "inventory" }) { edges { node { ${NODE} } } } }`, ...LIST_SQL(`(error_message ilike $1 or error_stack ilike $1)`, ['%inventory%']), postgraphile: PG_LIST(PG_ERROR_TEXT('inventory')) },
  { name: 'errorText rare ("checksum mismatch"), 50', graphql: `{ deadLetters(first: 50, filter: { errorText: "checksum mismatch" }) { edges { node { ${NODE} } } } }`, ...LIST_SQL(`(error_message ilike $1 or error_stack ilike $1)`, ['%checksum mismatch%']), postgraphile: PG_LIST(PG_ERROR_TEXT('checksum mismatch')) },
  // One event at any size from 424,007 rows on (none below): what "rare" means once the bench's
  // "rare" text, one row in 1,000, has 10,000 matches at 10M rows.
  { name: 'errorText one event ("ledger batch 424007"), 50', graphql: `{ deadLetters(first: 50, filter: { errorText: "ledger batch 424007" }) { edges { node { ${NODE} } } } }`, ...LIST_SQL(`(error_message ilike $1 or error_stack ilike $1)`, ['%ledger batch 424007%']), postgraphile: PG_LIST(PG_ERROR_TEXT('ledger batch 424007')),
    // The hand-written SQL and PostGraphile walk the whole created_at index for it (seconds at 10M).
    iterations: SLOW_ITERATIONS },
  { name: 'payloadContains tier=gold, 50', graphql: `{ deadLetters(first: 50, filter: { payloadContains: "{\\"customer\\":{\\"tier\\":\\"gold\\"}}" }) { edges { node { ${NODE} } } } }`, ...LIST_SQL(`payload @> $1::jsonb`, ['{"customer":{"tier":"gold"}}']), postgraphile: PG_LIST('{ payload: { contains: { customer: { tier: "gold" } } } }') },
  { name: 'payloadPath customer.id (rare), 50', graphql: `{ deadLetters(first: 50, filter: { payloadPath: { path: ["customer","id"], equals: "\\"c-4242\\"" } }) { edges { node { ${NODE} } } } }`, ...LIST_SQL(`payload @> $1::jsonb and payload #> '{customer,id}' = '"c-4242"'`, ['{"customer":{"id":"c-4242"}}']),
    // The filter plugin has no path operator. Containment matches the same rows here (it would
    // also match an array holding "c-4242").
    postgraphile: PG_LIST('{ payload: { contains: { customer: { id: "c-4242" } } } }') },
  // A count the rollups cannot answer: totalCount reads all 250k matches, boundedCount stops at 10,001.
  { name: 'payloadContains tier=gold, 50 + totalCount', graphql: `{ deadLetters(first: 50, filter: { payloadContains: "{\\"customer\\":{\\"tier\\":\\"gold\\"}}" }) { totalCount edges { node { ${NODE} } } } }`,
    sql: `select (select count(*) from dead_letters_current where payload @> $1::jsonb) as n, * from (${LIST_SQL('payload @> $1::jsonb').sql}) p`, params: ['{"customer":{"tier":"gold"}}'],
    postgraphile: PG_LIST('{ payload: { contains: { customer: { tier: "gold" } } } }', 'totalCount '), iterations: SLOW_ITERATIONS },
  { name: 'payloadContains tier=gold, 50 + boundedCount', graphql: `{ deadLetters(first: 50, filter: { payloadContains: "{\\"customer\\":{\\"tier\\":\\"gold\\"}}" }) { boundedCount { count exact } edges { node { ${NODE} } } } }`,
    sql: `select (select count(*) from (select 1 from dead_letters_current where payload @> $1::jsonb limit 10001) m) as n, * from (${LIST_SQL('payload @> $1::jsonb').sql}) p`, params: ['{"customer":{"tier":"gold"}}'],
    iterations: SLOW_ITERATIONS },
  { name: 'eventType, 50 + totalCount', graphql: `{ deadLetters(first: 50, filter: { eventTypes: ["invoice.sent"] }) { totalCount edges { node { ${NODE} } } } }`, sql: `select (select count(*) from dead_letters_current where event_type = $1) as n, * from (${LIST_SQL('event_type = $1').sql}) p`, params: ['invoice.sent'], postgraphile: PG_LIST('{ eventType: { equalTo: "invoice.sent" } }', 'totalCount '), iterations: SLOW_ITERATIONS },
  {
    name: 'stats overview, last 7 days',
    graphql: `query ($from: DateTime!) { deadLetterStats(filter: { createdAt: { from: $from } }) { total byStatus { key count } byEventType { key count } byQueue { key count } byErrorKind { key count } } }`,
    variables: { from: weekAgo() },
    sql: `select status, event_type, queue, error_kind, count(*) from dead_letters_current where created_at >= $1 group by grouping sets ((status), (event_type), (queue), (error_kind), ())`,
    params: [weekAgo()],
    iterations: SLOW_ITERATIONS,
  },
  {
    name: 'stats overview, 7 days from a whole hour (rollups)',
    graphql: `query ($from: DateTime!) { deadLetterStats(filter: { createdAt: { from: $from } }) { total byStatus { key count } byEventType { key count } byQueue { key count } byErrorKind { key count } } }`,
    variables: { from: weekAgoHour() },
    sql: `select status, event_type, queue, error_kind, count(*) from dead_letters_current where created_at >= $1 group by grouping sets ((status), (event_type), (queue), (error_kind), ())`,
    params: [weekAgoHour()],
    iterations: SLOW_ITERATIONS,
  },
  {
    name: 'hourly time series, 7 days (rollups)',
    graphql: `query ($from: DateTime!, $to: DateTime!) { deadLetterStats { timeSeries(bucket: HOUR, from: $from, to: $to) { start count } } }`,
    variables: { from: weekAgoHour(), to: nextHour() },
    sql: `select date_trunc('hour', created_at, 'UTC'), count(*) from dead_letters_current where created_at >= $1 and created_at < $2 group by 1 order by 1`,
    params: [weekAgoHour(), nextHour()],
    iterations: SLOW_ITERATIONS,
  },
  {
    // Everything deadLetterStats offers, in one request: what a dashboard's overview asks.
    name: 'all stats, last 7 days',
    graphql: `query ($from: DateTime!, $to: DateTime!) { deadLetterStats(filter: { createdAt: { from: $from } }) {
      total byStatus { key count } byEventType { key count } byQueue { key count } byErrorKind { key count }
      topErrors(limit: 10) { signature count firstSeen lastSeen sampleId } timeSeries(bucket: HOUR, from: $from, to: $to) { start count }
      oldestPendingCreatedAt retrySuccessRate meanAttemptsToSuccess blockedKeys(limit: 20) { orderingKey eventType headId heldBack } } }`,
    variables: { from: weekAgo(), to: nextHour() },
    sql: `select
      (select json_agg(x) from (select status, event_type, queue, error_kind, count(*) from dead_letters_current where created_at >= $1
                                group by grouping sets ((status), (event_type), (queue), (error_kind), ())) x) as counts,
      (select json_agg(x) from (select error_signature, count(*), min(created_at), max(created_at), min(id) from dead_letters_current
                                where created_at >= $1 group by 1 order by 2 desc, 1 limit 10) x) as top_errors,
      (select json_agg(x) from (select date_trunc('hour', created_at, 'UTC') as start, count(*) from dead_letters_current
                                where created_at >= $1 and created_at < $2 group by 1 order by 1) x) as series,
      (select row_to_json(x) from (select min(created_at) filter (where status = 'PENDING') as oldest_pending,
                                          count(*) filter (where status = 'SUCCEEDED') as succeeded, count(*) filter (where status = 'EXHAUSTED') as exhausted,
                                          avg(attempts) filter (where status = 'SUCCEEDED') as mean_attempts
                                     from dead_letters_current where created_at >= $1) x) as retry,
      (select json_agg(x) from (select h.ordering_key, h.event_type, h.id, h.held_back
                                  from (select distinct on (event_type, ordering_key) id, event_type, ordering_key, status, created_at,
                                               count(*) over (partition by event_type, ordering_key) - 1 as held_back
                                          from dead_letters_current where ordering_key is not null and status in ('PENDING', 'PROCESSING', 'EXHAUSTED')
                                         order by event_type, ordering_key, coalesce(ordering_seq, -1), id) h
                                 where h.status = 'EXHAUSTED' and h.held_back > 0 and h.created_at >= $1 and h.event_type = 'order.placed'
                                 order by h.held_back desc, h.ordering_key limit 20) x) as blocked_keys`,
    params: [weekAgo(), nextHour()],
    iterations: SLOW_ITERATIONS,
  },
  {
    name: 'top 10 errors, last 7 days',
    graphql: `query ($from: DateTime!) { deadLetterStats(filter: { createdAt: { from: $from } }) { topErrors(limit: 10) { signature count firstSeen lastSeen sampleId } } }`,
    variables: { from: weekAgo() },
    sql: `select error_signature, count(*), min(created_at), max(created_at), min(id) from dead_letters_current where created_at >= $1 group by 1 order by 2 desc, 1 limit 10`,
    params: [weekAgo()],
    iterations: SLOW_ITERATIONS,
  },
];

type Fetch = (url: string, init: RequestInit) => Promise<Response>;

async function postGraphQL(fetch: Fetch, shape: Shape, body: string): Promise<Record<string, any>> {
  const response = await fetch('http://bench/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const json = (await response.json()) as { data?: Record<string, any>; errors?: unknown };
  if (json.errors || !json.data) throw new Error(`${shape.name}: ${response.status} ${JSON.stringify(json.errors)}`);
  return json.data;
}

// Fails the run when PostGraphile's page is not Lazarus's page (ids compared as strings).
function assertSamePage(shape: Shape, lazarus: Record<string, any>, rival: Record<string, any>): void {
  const ours = { ids: lazarus.deadLetters.edges.map((e: any) => String(e.node.id)), total: lazarus.deadLetters.totalCount };
  const theirs = { ids: rival.allDeadLetters.edges.map((e: any) => String(e.node.rowId)), total: rival.allDeadLetters.totalCount };
  if (JSON.stringify(ours) !== JSON.stringify(theirs)) {
    throw new Error(`${shape.name}: PostGraphile returned a different page.\nLazarus:      ${JSON.stringify(ours)}\nPostGraphile: ${JSON.stringify(theirs)}`);
  }
}

async function seed(): Promise<void> {
  await dropDatabase(ADMIN_URL, DB_NAME);
  await createDatabase(ADMIN_URL, DB_NAME);
  await migrate(BENCH_URL);
  const started = performance.now();
  if (SEED_PATH === 'triggers') {
    const client = new pg.Client({ connectionString: BENCH_URL });
    await client.connect();
    const chunk = 100_000;
    const now = new Date();
    for (let lo = 1; lo <= ROWS; lo += chunk) {
      await insertThroughTriggers(client, lo, Math.min(ROWS, lo + chunk - 1), now);
      process.stderr.write(`seeded ${Math.min(ROWS, lo + chunk - 1)} rows\n`);
    }
    const seconds = (performance.now() - started) / 1000;
    // What the service does within a minute of these inserts (startRollupCompaction): fold the
    // ledger rows each seed statement appended. Unfolded, counts from the rollups read several rows
    // per group and lose to a plain count(*) up to a few hundred thousand rows.
    await client.query('select lazarus_compact_rollups()');
    await client.query('vacuum analyze');
    await client.end();
    console.log(`Seeded ${ROWS} rows in ${seconds.toFixed(1)} s (INSERT … SELECT generate_series, triggers on, all indexes present), then compacted the rollups.`);
  } else {
    const t = await bulkLoadDeadLetters({ url: BENCH_URL, rows: ROWS, connections: SEED_CONNECTIONS, log: (line) => process.stderr.write(`${line}\n`) });
    const f = (s: number) => s.toFixed(1);
    console.log(`Seeded ${ROWS} rows in ${f(t.totalSeconds)} s (bulk load on ${SEED_CONNECTIONS} connections, triggers off and rebuilt set-based: ` +
      `load ${f(t.loadSeconds)} s, vacuum ${f(t.vacuumSeconds)} s, rollups, error groups and indexes ${f(t.buildSeconds)} s, analyze ${f(t.analyzeSeconds)} s).`);
  }
  const checkStarted = performance.now();
  const check = await verifyDerivedTables(BENCH_URL);
  console.log(`Checked against a scan of dead_letters in ${((performance.now() - checkStarted) / 1000).toFixed(1)} s: ` +
    `${check.rollupGroups} rollup groups and ${check.signatureGroups} signature groups equal, error texts and RECORDED history complete.\n`);
}

// BENCH_EXHAUSTED_DAYS=n: EXHAUSTED events stay only among the seed's oldest n days; the newer ones
// become SUCCEEDED, as if a redrive had worked and left behind the events it could not deliver.
// BENCH_SUCCEEDED_DAYS=n: the same for SUCCEEDED events; the newer ones become EXHAUSTED, as if an
// incident redriven n days after the seed began was followed by new failures.
// The seed spreads every status evenly over 30 days, where a status page finds its rows among the
// newest; in these shapes "EXHAUSTED (SUCCEEDED), newest first" has to get past 30 - n days of other
// events. The change is made on dead_letter_states through its triggers, so the rollups stay exact,
// and the rival's table is copied afresh after it (rivalTable). Once per database: a second run finds
// nothing newer to change.
const KEEP_OLDEST = {
  EXHAUSTED: { env: 'BENCH_EXHAUSTED_DAYS', to: 'SUCCEEDED', set: `resolved_at = created_at` },
  SUCCEEDED: { env: 'BENCH_SUCCEEDED_DAYS', to: 'EXHAUSTED', set: `resolved_at = null, resolved_by = null, next_attempt_at = null` },
} as const;

async function keepOldest(status: keyof typeof KEEP_OLDEST, days: number): Promise<number> {
  const { env, to, set } = KEEP_OLDEST[status];
  const client = new pg.Client({ connectionString: BENCH_URL });
  await client.connect();
  try {
    const started = performance.now();
    const { rows: [{ cutoff }] } = await client.query(`select min(created_at) + $1::int * interval '1 day' as cutoff from dead_letters`, [days]);
    const { rowCount } = await client.query(`update dead_letter_states set status = '${to}', ${set} where status = '${status}' and created_at >= $1`, [cutoff]);
    await client.query('vacuum analyze dead_letters, dead_letter_states');
    const { rows: [left] } = await client.query(`select count(*)::int as n from dead_letter_states where status = $1`, [status]);
    console.log(`${env}=${days}: ${rowCount} newer ${status} events made ${to}, ${left.n} ${status} left, all created before ${cutoff.toISOString()} ` +
      `(${((performance.now() - started) / 1000).toFixed(1)} s).\n`);
    return rowCount ?? 0;
  } finally {
    await client.end();
  }
}

// The rival is the do-it-yourself design: one wide table that holds each event's current status, in
// its own schema so PostGraphile sees only it. It is a copy of dead_letters_current with
// dead_letters' columns and indexes (LIKE … INCLUDING ALL), plus the index a status filter needs.
// Lazarus keeps dead_letters write-once (its state columns are inputs only, always NULL) and the
// state in dead_letter_states, so pointing PostGraphile at dead_letters would find no status. Copied
// again whenever the seed or keepOldest changed something, or the copy's count differs.
async function rivalTable(pool: pg.Pool, changed: boolean): Promise<void> {
  const count = async (table: string) => (await pool.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]!.n;
  const { rows: [{ exists }] } = await pool.query(`select to_regclass('rival.dead_letters') is not null as exists`);
  const ours = await count('dead_letters');
  if (!changed && exists && (await count('rival.dead_letters')) === ours) return;
  const started = performance.now();
  const { rows: columns } = await pool.query<{ name: string }>(
    `select quote_ident(attname) as name from pg_attribute where attrelid = 'dead_letters'::regclass and attnum > 0 and not attisdropped order by attnum`);
  const list = columns.map((c) => c.name).join(', ');
  // The indexes are built after the copy, as a bulk load should be: copying 10M rows into a table
  // that already had them took over ten minutes.
  const { rows: indexes } = await pool.query<{ sql: string }>(`
    select case when i.indisprimary
             then 'alter table rival.dead_letters add primary key (' || (select string_agg(quote_ident(a.attname), ', ' order by k.n)
                    from unnest(i.indkey) with ordinality k(attnum, n) join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum) || ')'
             else regexp_replace(pg_get_indexdef(i.indexrelid), '^CREATE (UNIQUE )?INDEX \\S+ ON public\\.dead_letters ', 'CREATE \\1INDEX ON rival.dead_letters ')
           end as sql
      from pg_index i where i.indrelid = 'public.dead_letters'::regclass`);
  await pool.query(`drop schema if exists rival cascade; create schema rival;
    create table rival.dead_letters (like public.dead_letters including all excluding indexes);
    insert into rival.dead_letters (${list}) overriding system value select ${list} from dead_letters_current;
    set maintenance_work_mem = '256MB';
    ${indexes.map((i) => `${i.sql};`).join('\n    ')}
    create index on rival.dead_letters (status, created_at);
    reset maintenance_work_mem`);
  await pool.query('vacuum analyze rival.dead_letters');
  console.log(`Rival table rival.dead_letters copied from dead_letters_current (${ours} rows, ${((performance.now() - started) / 1000).toFixed(1)} s).\n`);
}

async function main(): Promise<void> {
  if (!SKIP_SEED) await seed();
  else await migrate(BENCH_URL); // a database seeded by an older checkout gets the newer migrations
  let changed = !SKIP_SEED;
  for (const [status, { env }] of Object.entries(KEEP_OLDEST)) {
    if (process.env[env]) changed = (await keepOldest(status as keyof typeof KEEP_OLDEST, Number(process.env[env]))) > 0 || changed;
  }
  const handle = createDb(BENCH_URL, { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: 'lazarus-bench' });
  const server = createGraphQLServer({ db: handle.db, logger: pino({ level: 'silent' }), graphiql: false, authenticate: () => LOCAL_PRINCIPAL, isReady: async () => true });
  const lazarusFetch: Fetch = async (url, init) => server.fetch(url, init);
  const pool = new pg.Pool({ connectionString: BENCH_URL, max: 4 });
  // Keys of an ordered type, so blockedKeys has keys to find (its hand-written SQL names the type).
  await pool.query(`insert into retry_policies (event_type, ordered) values ('order.placed', true) on conflict (event_type) do update set ordered = true`);
  await rivalTable(pool, changed);
  const rivalPool = new pg.Pool({ connectionString: BENCH_URL, max: 4, application_name: 'postgraphile-bench' });
  const rival = await createPostGraphileRival(rivalPool);
  const { rows } = await pool.query('select count(*)::int as n from dead_letters');
  console.log(`Rows: ${rows[0].n}. Iterations per shape: ${ITERATIONS} (fewer where marked), after ${WARMUPS > 10 && WARMUP_MS > 0 ? `10 to ${WARMUPS} warm-ups (past 10, for at most ${WARMUP_MS} ms)` : `${Math.min(WARMUPS, 10)} warm-ups`}; GraphQL, SQL and PostGraphile samples alternate.\n`);
  console.log('| query shape | GraphQL p50 | GraphQL p95 | SQL p50 | SQL p95 | GraphQL/SQL p50 | PostGraphile p50 | PostGraphile p95 | Lazarus/PostGraphile p50 |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  const plans: string[] = [];
  // BENCH_SHAPES: only the shapes whose names contain one of these comma-separated texts.
  const only = process.env.BENCH_SHAPES?.split(',');
  for (const shape of SHAPES.filter((s) => !only || only.some((text) => s.name.includes(text)))) {
    const n = shape.iterations ?? ITERATIONS;
    const body = JSON.stringify({ query: shape.graphql, variables: shape.variables ?? {} });
    const rivalBody = shape.postgraphile && JSON.stringify({ query: shape.postgraphile });
    const runs = [() => postGraphQL(lazarusFetch, shape, body), () => pool.query(shape.sql, shape.params)];
    if (rivalBody) {
      assertSamePage(shape, await postGraphQL(lazarusFetch, shape, body), await postGraphQL(rival.fetch, shape, rivalBody));
      runs.push(() => postGraphQL(rival.fetch, shape, rivalBody));
    }
    const [gql, sql, pgl] = await timeAlternating(runs, n, { rounds: WARMUPS, ms: WARMUP_MS });
    const f = (x: number) => x.toFixed(1);
    const rivalCells = pgl ? `${f(pgl.p50)} | ${f(pgl.p95)} | ${(gql!.p50 / pgl.p50).toFixed(2)}×` : '— | — | —';
    console.log(`| ${shape.name}${shape.iterations ? ` (n=${n})` : ''} | ${f(gql!.p50)} | ${f(gql!.p95)} | ${f(sql!.p50)} | ${f(sql!.p95)} | ${(gql!.p50 / sql!.p50).toFixed(2)}× | ${rivalCells} |`);
    const plan = await pool.query(`explain (costs off) ${shape.sql}`, shape.params);
    plans.push(`${shape.name}:\n${plan.rows.map((r) => `    ${r['QUERY PLAN']}`).join('\n')}`);
  }
  console.log('\nTimes in ms; Lazarus/PostGraphile below 1× means Lazarus is faster. EXPLAIN (costs off) of each hand-written SQL:\n');
  console.log(plans.join('\n\n'));
  await rival.release();
  await rivalPool.end();
  await pool.end();
  await handle.close();
}

await main();
