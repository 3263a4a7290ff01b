// npm run bench:groups — error groups, two parts in one run.
// 1. What group maintenance (migration 20261125130000_error_groups_ledger: the row trigger that
//    stamps error_group_id and the statement triggers that append to the ledger) costs writers,
//    A/B the same way as bench:rollups (bench/rollupCost.ts): 500-row multi-row INSERTs (≈ 3 KB
//    rows, like bench:ingest), one-row INSERTs, full-table status UPDATEs and a DELETE, with the
//    group triggers enabled and disabled alternately (ALTER TABLE … DISABLE TRIGGER between timed
//    statements), one connection, one database. Every other trigger (stamp, NOTIFY, rollups,
//    RECORDED, error texts) stays on in both modes: "off" is main without groups. The folder's own
//    time (lazarus_fold_error_groups over the whole ledger, off the producers' path) is reported
//    beside it. Rows fall into 4 groups (one per event type) unless GROUP_COUNT=n spreads them over
//    n fingerprints. STACKS=1 gives every row a Node stack of ~1 KB (8 frames, line numbers varying,
//    3 call sites), so the group signature reads frames (migration 20261126100000_stack_signatures);
//    both modes then pay for storing and indexing the stack, "on" for its frames too.
// 2. errorGroups' first page (50 groups with their 24-hour sparkline, as the console asks) at
//    PAGE_GROUPS groups (default 10,000) and PAGE_EVENTS events (default 1,000,000), through the
//    whole GraphQL pipeline in-process: p50/p95 per order over PAGE_RUNS requests (default 40).
// BENCH_DATABASE_URL (or TEST_DATABASE_URL) names an admin database; a scratch database is created
// and dropped. EVENTS (default 20,000), SINGLES (default 2,000) and ROUNDS (default 3) size part 1.
import { loadavg } from 'node:os';
import pg from 'pg';
import { pino } from 'pino';
import { LOCAL_PRINCIPAL } from '../src/api/auth/principal.ts';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from '../test/helpers/databases.ts';
import { BATCH, measureTriggerCost, summarizeTriggerCost, timed } from './triggerCost.ts';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import { createGraphQLServer } from '../src/api/server.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.EVENTS ?? 20_000);
const SINGLES = Number(process.env.SINGLES ?? 2_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const GROUPS = process.env.GROUP_COUNT ? Number(process.env.GROUP_COUNT) : null;
const STACKS = process.env.STACKS === '1';
const stackOf = (i: number) => `Error: HTTP 503 from inventory-service (request ${i})
    at InventoryClient.reserve (/app/src/clients/inventory.ts:${80 + (i % 40)}:11)
    at async ${['placeOrder', 'shipOrder', 'captureOrder'][i % 3]} (/app/src/orders/handlers.ts:${100 + (i % 7)}:5)
    at async Promise.all (index ${i % 4})
    at async consume (/app/src/kafka/consumer.ts:57:9)
    at async Runner.processEachMessage (/app/node_modules/kafkajs/src/consumer/runner.js:231:9)
    at async onBatch (/app/node_modules/kafkajs/src/consumer/runner.js:447:9)
    at async Runner.handleBatch (/app/node_modules/kafkajs/src/consumer/runner.js:461:5)
    at async /app/node_modules/kafkajs/src/consumer/runner.js:584:13`;
const PAGE_GROUPS = Number(process.env.PAGE_GROUPS ?? 10_000);
const PAGE_EVENTS = Number(process.env.PAGE_EVENTS ?? 1_000_000);
const PAGE_RUNS = Number(process.env.PAGE_RUNS ?? 40);
// Since the split the update and delete deltas share a trigger with the rollups' (and, on delete,
// the state row's removal and the tombstone): those triggers are toggled whole.
const TRIGGERS = ['tg_dead_letters__error_group_id', 'tg_dead_letters__error_groups_insert', 'tg_dead_letter_states__transitions', 'tg_dead_letters__update', 'tg_dead_letters__delete'];

const name = randomDatabaseName('lazarus_bench');
const url = await createDatabase(adminUrl, name);
const client = new pg.Client({ connectionString: url });
client.on('error', () => {});
try {
  await migrate(url, { logger: pino({ level: 'silent' }) });
  await client.connect();
  const totals = await measureTriggerCost({ client, triggers: TRIGGERS, events: EVENTS, singles: SINGLES, rounds: ROUNDS, fingerprint: GROUPS ? (i) => `group-${i % GROUPS}` : undefined, stack: STACKS ? stackOf : undefined });
  const groupCount = async () => (await client.query('select count(*)::int as n from error_groups')).rows[0].n as number;
  const rows = (await client.query('select count(*)::int as n from dead_letters')).rows[0].n;
  const ledgerRows = (await client.query('select count(*)::int as n from error_group_deltas')).rows[0].n as number;
  const handle = createDb(url, { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 600_000, applicationName: 'bench-groups' });
  const foldMs = await timed(() => foldErrorGroupLedger(handle.db));
  const groups = await groupCount();
  const page = await measureFirstPage(handle);
  await handle.close();
  const summary = summarizeTriggerCost(totals);
  console.log(JSON.stringify({
    batchInserts: `${EVENTS} rows in ${BATCH}-row statements, half each mode`, singleInserts: `${SINGLES} one-row statements, half each mode`,
    bulkUpdates: `${ROUNDS} full-table status updates per mode over ${EVENTS + SINGLES} rows`, deletes: `half of the rows per mode`, rowsLeft: rows, groups, stacks: STACKS,
    loadAverage1m: Number(loadavg()[0]!.toFixed(2)), summary,
    folder: { ledgerRows, foldMs: Math.round(foldMs), msPer1000LedgerRows: Number(((foldMs / Math.max(1, ledgerRows)) * 1000).toFixed(1)) },
    firstPage: page,
  }, null, 2));
  async function measureFirstPage(h: ReturnType<typeof createDb>) {
    await client.query('truncate dead_letters, dead_letter_actions, delivery_attempts, redrives, redrive_items, redrive_actions');
    // PAGE_EVENTS rows over PAGE_GROUPS fingerprints and the last 14 days, in 100,000-row statements.
    const loadStart = performance.now();
    for (let done = 0; done < PAGE_EVENTS; done += 100_000) {
      await client.query(`insert into dead_letters (event_type, queue, source, error_kind, error_message, fingerprint, status, created_at)
        select 'type.' || (i % 20), 'q' || (i % 7), 'src', 'DOWNSTREAM_API', 'HTTP 503 (request ' || i || ')', 'fp-' || (i % $2::int),
               (case when i % 3 = 0 then 'RESOLVED' else 'EXHAUSTED' end)::"DeadLetterStatus", now() - (i % 336) * interval '1 hour'
          from generate_series($1::int, $1::int + least(100000, $3::int - $1::int) - 1) i`, [done, PAGE_GROUPS, PAGE_EVENTS]);
    }
    const loadMs = performance.now() - loadStart;
    const foldStart = performance.now();
    await foldErrorGroupLedger(h.db);
    const pageFoldMs = performance.now() - foldStart;
    for (const table of ['error_groups', 'error_group_hours', 'dead_letters']) await client.query(`vacuum analyze ${table}`);
    const server = createGraphQLServer({ db: h.db, logger: pino({ level: 'silent' }), graphiql: false, authenticate: () => LOCAL_PRINCIPAL, isReady: async () => true });
    const query = `query ($orderBy: ErrorGroupOrderField) { errorGroups(orderBy: $orderBy, first: 50, filter: { statuses: [OPEN, ACKNOWLEDGED] }) {
      totalCount edges { node { id status eventType errorKind signature count unresolvedCount firstSeen lastSeen regressedAt hourly(hours: 24) { start count } } } } }`;
    const byOrder: Record<string, { p50Ms: number; p95Ms: number }> = {};
    for (const orderBy of ['LAST_SEEN', 'COUNT', 'UNRESOLVED', 'TREND']) {
      const times: number[] = [];
      for (let i = 0; i < PAGE_RUNS + 3; i++) {
        const start = performance.now();
        const response = await server.fetch('http://bench/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables: { orderBy } }) });
        const body = (await response.json()) as { errors?: unknown; data?: { errorGroups: { edges: unknown[] } } };
        if (body.errors || body.data?.errorGroups.edges.length !== 50) throw new Error(`unexpected answer: ${JSON.stringify(body).slice(0, 300)}`);
        if (i >= 3) times.push(performance.now() - start); // the first three warm the plans
      }
      times.sort((a, b) => a - b);
      const at = (q: number) => Number(times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(1));
      byOrder[orderBy] = { p50Ms: at(0.5), p95Ms: at(0.95) };
    }
    const groupsNow = await groupCount();
    return { events: PAGE_EVENTS, groups: groupsNow, loadMs: Math.round(loadMs), foldMs: Math.round(pageFoldMs), runsPerOrder: PAGE_RUNS, byOrder };
  }
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await client.end().catch(() => {});
  await dropDatabase(adminUrl, name);
}
