// npm run bench:read:orders — pages of 50 for every pairing of a filter with an order other than
// created, on the database bench:read seeded (BENCH_ADMIN_URL, BENCH_DB; run `npm run bench:read`
// first). In created order each filter has an index on (column, created_at); in the other orders a
// filter's matches may sit anywhere in the order's own index (src/db/sql/orderedPage.ts). Prints
// the median of BENCH_ITERATIONS (default 3) requests per pairing, in-process like bench:read.
import { pino } from 'pino';
import { LOCAL_PRINCIPAL } from '../src/api/auth/principal.ts';
import { createDb } from '../src/db/createDb.ts';
import { createGraphQLServer } from '../src/api/server.ts';

const url = new URL(process.env.BENCH_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
url.pathname = `/${process.env.BENCH_DB ?? 'lazarus_bench'}`;
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 3);
const handle = createDb(url.toString(), { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: 'lazarus-bench' });
const server = createGraphQLServer({ db: handle.db, logger: pino({ level: 'silent' }), graphiql: false, authenticate: () => LOCAL_PRINCIPAL, isReady: async () => true });

const day = (daysAgo: number) => new Date(Math.floor(Date.now() / 86_400_000 - daysAgo) * 86_400_000).toISOString();
const FILTERS = [
  `{ createdAt: { from: "${day(21)}", to: "${day(20)}" } }`,
  `{ updatedAt: { from: "${day(10)}" } }`,
  '{ statuses: [PENDING] }',
  '{ statuses: [EXHAUSTED] }',
  '{ statuses: [DISCARDED] }',
  '{ eventTypes: ["invoice.sent"] }',
  '{ errorKinds: [CRASH], queues: ["users"] }',
  '{ sources: ["crm"], eventTypes: ["refund.issued"] }',
  '{ attempts: { min: 9 } }',
  '{ errorSignatures: ["worker <n> crashed: out of memory"] }',
  '{ orderingKey: "cust-420" }',
  '{ payloadContains: "{\\"customer\\":{\\"tier\\":\\"gold\\"}}" }',
  '{ payloadContains: "{\\"customer\\":{\\"id\\":\\"c-4242\\"}}" }',
  '{ ids: ["7", "1007", "999007"] }',
];

try {
  const { rows } = await handle.pool.query<{ n: number }>('select count(*)::int as n from dead_letters');
  if (!rows[0]!.n) throw new Error(`${url.pathname.slice(1)} holds no dead letters: run npm run bench:read first`);
  console.log(`\n${rows[0]!.n} rows; median of ${ITERATIONS} pages of 50 per pairing, ms\n`);
  console.log('| filter | UPDATED_AT DESC | UPDATED_AT ASC | NEXT_ATTEMPT_AT DESC | NEXT_ATTEMPT_AT ASC | ATTEMPTS DESC | ATTEMPTS ASC |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const filter of FILTERS) {
    const cells: string[] = [];
    for (const field of ['UPDATED_AT', 'NEXT_ATTEMPT_AT', 'ATTEMPTS']) {
      for (const direction of ['DESC', 'ASC']) {
        const body = JSON.stringify({ query: `{ deadLetters(first: 50, filter: ${filter}, orderBy: { field: ${field}, direction: ${direction} }) { edges { node { id } } } }` });
        const times: number[] = [];
        for (let i = 0; i < ITERATIONS; i++) {
          const started = performance.now();
          const response = await server.fetch('http://bench/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
          const json = (await response.json()) as { errors?: unknown };
          if (json.errors) throw new Error(`${filter} ${field} ${direction}: ${JSON.stringify(json.errors)}`);
          times.push(performance.now() - started);
        }
        cells.push(times.toSorted((a, b) => a - b)[Math.floor(times.length / 2)]!.toFixed(1));
      }
    }
    console.log(`| \`${filter.replace(/\|/g, '\\|')}\` | ${cells.join(' | ')} |`);
  }
} finally {
  await handle.close();
}
