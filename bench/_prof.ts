import { pino } from 'pino';
import { LOCAL_PRINCIPAL } from '../src/api/auth/principal.ts';
import { createDb } from '../src/db/createDb.ts';
import { createGraphQLServer } from '../src/api/server.ts';
const handle = createDb('postgresql://postgres@127.0.0.1:5499/p100k', { poolMax: 4, acquireTimeoutMs: 5000, statementTimeoutMs: 30000, idleInTransactionTimeoutMs: 30000 } as any);
const server = createGraphQLServer({ db: handle.db, logger: pino({ level: 'silent' }), graphiql: false, authenticate: () => LOCAL_PRINCIPAL, isReady: async () => true });
const body = JSON.stringify({ query: `{ deadLetters(first: 50, filter: { eventTypes: ["invoice.sent"] }) { edges { node { id eventType status attempts createdAt error { kind message } } } } }` });
async function one() {
  const r = await server.fetch('http://bench/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const j: any = await r.json(); if (j.errors) throw new Error(JSON.stringify(j.errors));
}
for (let i = 0; i < Number(process.env.W ?? 200); i++) await one();
const N = Number(process.env.N ?? 3000);
const t0 = performance.now();
for (let i = 0; i < N; i++) await one();
console.log('per request ms', ((performance.now() - t0) / N).toFixed(3));
await handle.close?.();
process.exit(0);
