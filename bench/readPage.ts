// npm run bench:read:page — the fixed cost of a cheap page, on bench:read's database (run
// bench:read first). For each shape, many samples of three requests in turn: the page through Yoga
// as served, and bench:read's hand-written SQL through pg, unnamed and as a named prepared
// statement. p50s in ms, and what the GraphQL request adds to the unnamed SQL. bench:read itself
// takes few samples of several contenders; this isolates what the GraphQL layer adds to one page.
import pg from 'pg';
import { pino } from 'pino';
import { LOCAL_PRINCIPAL } from '../src/api/auth/principal.ts';
import { createDb } from '../src/db/createDb.ts';
import { createGraphQLServer, type GraphQLServer } from '../src/api/server.ts';
import { timeAlternating } from './timeAlternating.ts';

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const url = new URL(ADMIN_URL);
url.pathname = `/${process.env.BENCH_DB ?? 'lazarus_bench'}`;
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 2000);
const WARMUPS = Number(process.env.BENCH_WARMUPS ?? 300);

const NODE = 'id eventType status attempts createdAt error { kind message }';
const SQL = (where: string) => `select id, event_type, status, attempts, created_at, error_kind, error_message from dead_letters_current where ${where} order by created_at desc, id desc limit 51`;
const SHAPES = [
  { name: 'newest 50, no count', filter: '', sql: SQL('true'), params: [] },
  { name: 'status = EXHAUSTED, 50', filter: ', filter: { statuses: [EXHAUSTED] }', sql: SQL(`status = 'EXHAUSTED'`), params: [] },
  { name: 'eventType, 50', filter: ', filter: { eventTypes: ["invoice.sent"] }', sql: SQL('event_type = $1'), params: ['invoice.sent'] },
  { name: 'payloadContains tier=gold, 50', filter: ', filter: { payloadContains: "{\\"customer\\":{\\"tier\\":\\"gold\\"}}" }', sql: SQL('payload @> $1::jsonb'), params: ['{"customer":{"tier":"gold"}}'] },
  { name: 'payloadPath customer.id (rare), 50', filter: ', filter: { payloadPath: { path: ["customer","id"], equals: "\\"c-4242\\"" } }', sql: SQL(`payload @> $1::jsonb and payload #> '{customer,id}' = '"c-4242"'`), params: ['{"customer":{"id":"c-4242"}}'] },
];

const handle = createDb(url.toString(), { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: 'lazarus-bench' });
const server = createGraphQLServer({ db: handle.db, logger: pino({ level: 'silent' }), graphiql: false, authenticate: () => LOCAL_PRINCIPAL, isReady: async () => true });
const pool = new pg.Pool({ connectionString: url.toString(), max: 4 });

async function request(target: GraphQLServer, body: string): Promise<void> {
  const response = await target.fetch('http://bench/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const json = (await response.json()) as { errors?: unknown };
  if (json.errors) throw new Error(JSON.stringify(json.errors));
}

console.log(`${SAMPLES} samples per contender after ${WARMUPS} warm-ups, in turn; p50 in ms.\n`);
console.log('| query shape | GraphQL | SQL | SQL, prepared | GraphQL − SQL |');
console.log('|---|---:|---:|---:|---:|');
for (const [i, shape] of SHAPES.entries()) {
  const body = JSON.stringify({ query: `{ deadLetters(first: 50${shape.filter}) { edges { node { ${NODE} } } } }` });
  // The same SQL as a named prepared statement shows what planning costs; Lazarus plans pages per
  // request (their best plan depends on the values), so the GraphQL page is compared to the unnamed SQL.
  const prepared = { name: `bench_page_${i}`, text: shape.sql, values: shape.params };
  const runs = [() => request(server, body), () => pool.query(shape.sql, shape.params), () => pool.query(prepared)];
  const [g, s, p] = (await timeAlternating(runs, SAMPLES, { rounds: WARMUPS })).map((t) => t.p50) as [number, number, number];
  console.log(`| ${shape.name} | ${g.toFixed(3)} | ${s.toFixed(3)} | ${p.toFixed(3)} | ${(g - s).toFixed(3)} |`);
}
await pool.end();
await handle.close();
