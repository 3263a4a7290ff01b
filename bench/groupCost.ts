// npm run bench:groups — error groups against issue 19's bars, three parts in one run, one table.
// 1. What group maintenance (migration 20261125130000_error_groups_ledger: the row trigger that
//    stamps error_group_id and the statement triggers that append to the ledger) costs writers,
//    A/B the same way as bench:rollups (bench/triggerCost.ts): 500-row multi-row INSERTs (≈ 3 KB
//    rows, like bench:ingest), one-row INSERTs, full-table status UPDATEs and a DELETE, with the
//    group triggers enabled and disabled alternately (ALTER TABLE … DISABLE TRIGGER between timed
//    statements), one connection, one database. Every other trigger (stamp, NOTIFY, rollups,
//    RECORDED, error texts) stays on in both modes: "off" is main without groups. ROUNDS rounds
//    (default 7), each alternating on/off statement by statement and giving its own on ÷ off per
//    measurement; the table shows the median round and the spread (min–max), so one noisy moment
//    of the machine shows as spread, not as the result. The folder's own time (over the last
//    round's ledger, off the producers' path) is reported beside it. Rows fall into 4 groups (one
//    per event type) unless GROUP_COUNT=n spreads them over n fingerprints. STACKS=1 gives every
//    row a Node stack of ~1 KB (8 frames, line numbers varying, 3 call sites), so the group
//    signature reads frames (migration 20261126100000_stack_signatures); both modes then pay for
//    storing and indexing the stack, "on" for its frames too.
// 2. errorGroups' first page (50 groups with their 24-hour sparkline, as the console asks) at
//    PAGE_GROUPS groups (default 10,000) and PAGE_EVENTS events (default 1,000,000), through the
//    whole GraphQL pipeline in-process: p50/p95 per order over PAGE_RUNS requests (default 40).
//    TREND twice: from the folder's trend_count (what the service does), and with the trend window
//    moved an hour back, so the page sums each group's hours at read time (the baseline: how TREND
//    was read before migration 20261126110000). The TREND page is checked against a scan.
// 3. A REGRESSION alert through the real path (bench/regressionAlertLatency.ts): the service as its
//    own process, a plain SQL INSERT's COMMIT → the local receiver's request, ALERT_SAMPLES (default
//    40) samples.
// BENCH_DATABASE_URL (or TEST_DATABASE_URL) names an admin database; a scratch database is created
// and dropped. EVENTS (default 10,000 per round), SINGLES (default 1,000 per round) and UPDATES
// (status updates per mode per round, default 2) size part 1. SKIP_PAGE=1 / SKIP_ALERTS=1 skip parts.
// The table's first rows say which triggers were toggled.
import { loadavg } from 'node:os';
import type pg from 'pg';
import { pino } from 'pino';
import { LOCAL_PRINCIPAL } from '../src/api/auth/principal.ts';
import { createDb } from '../src/db/createDb.ts';
import { inScratchDatabase } from './scratchDatabase.ts';
import { measureTriggerCost, timed, type TriggerCostKey, type TriggerCostTotals } from './triggerCost.ts';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import { createGraphQLServer } from '../src/api/server.ts';
import { measureRegressionAlerts, type AlertLatency } from './regressionAlertLatency.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.EVENTS ?? 10_000);
const SINGLES = Number(process.env.SINGLES ?? 1_000);
const UPDATES = Number(process.env.UPDATES ?? 2);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
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
const ALERT_SAMPLES = Number(process.env.ALERT_SAMPLES ?? 40);
// GROUP_TRIGGERS=a,b toggles only those (the others stay on in both modes): e.g. the insert
// statement trigger alone, to tell its cost from the row trigger's. The row trigger cannot be off
// while the insert trigger is on (the ledger's group_id would be null).
// Since the queue-state split the update and delete deltas share a trigger with the rollups' (and,
// on delete, the state row's removal and the tombstone): those triggers are toggled whole.
const TRIGGERS = (process.env.GROUP_TRIGGERS ?? 'tg_dead_letters__error_group_id,tg_dead_letters__error_groups_insert,tg_dead_letter_states__transitions,tg_dead_letters__update,tg_dead_letters__delete').split(',');
const ORDERS = ['LAST_SEEN', 'COUNT', 'UNRESOLVED', 'TREND'] as const;
const KEYS: TriggerCostKey[] = ['batchInsertMs', 'singleInsertMs', 'bulkUpdateMs', 'deleteMs'];

type Percentiles = { p50Ms: number; p95Ms: number };
const load = [loadavg()[0]!];
await inScratchDatabase(adminUrl, async ({ url, client }) => {
  const handle = createDb(url, { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 600_000, applicationName: 'bench-groups' });

  // Part 1: ROUNDS rounds, each alternating on/off statement by statement.
  const rounds: TriggerCostTotals[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    rounds.push(await measureTriggerCost({ client, triggers: TRIGGERS, events: EVENTS, singles: SINGLES, rounds: UPDATES, fingerprint: GROUPS ? (i) => `group-${i % GROUPS}` : undefined, stack: STACKS ? stackOf : undefined }));
    const last = rounds.at(-1)!;
    process.stderr.write(`round ${r + 1}/${ROUNDS}: wall ${JSON.stringify(ratiosOf(last))}${last.cpu ? `, backend CPU ${JSON.stringify(ratiosOf(last.cpu))}` : ''}\n`);
  }
  const ledgerRows = (await client.query('select count(*)::int as n from error_group_deltas')).rows[0].n as number;
  const foldMs = await timed(() => foldErrorGroupLedger(handle.db));
  load.push(loadavg()[0]!);

  const page = process.env.SKIP_PAGE ? null : await measureFirstPage(client, handle);
  load.push(loadavg()[0]!);
  const alerts = process.env.SKIP_ALERTS ? null : await measureRegressionAlerts(url, ALERT_SAMPLES);
  load.push(loadavg()[0]!);
  // Closed last: in one CI smoke a query of this handle's still ran after part 2 and found the pool
  // ended (an uncaught "Cannot use a pool after calling end"); which request left it is not known.
  await handle.close();

  printTable({ rounds, ledgerRows, foldMs, page, alerts });
});

type Totals = Record<TriggerCostKey, { on: number; off: number }>;

function ratiosOf(t: Totals): Record<TriggerCostKey, number> {
  return Object.fromEntries(KEYS.map((k) => [k, Number((t[k].on / t[k].off).toFixed(3))])) as Record<TriggerCostKey, number>;
}

/** The median round's on ÷ off, the spread over rounds, and every round pooled. */
function spreadOf(rounds: Totals[], k: TriggerCostKey) {
  const xs = rounds.map((t) => t[k].on / t[k].off).sort((a, b) => a - b);
  const median = xs[Math.floor(xs.length / 2)]!;
  const pooled = rounds.reduce((n, t) => n + t[k].on, 0) / rounds.reduce((n, t) => n + t[k].off, 0);
  return { median, text: `**${median.toFixed(2)}×** (${xs[0]!.toFixed(2)}–${xs.at(-1)!.toFixed(2)}; pooled ${pooled.toFixed(2)}×)` };
}

function printTable(r: { rounds: TriggerCostTotals[]; ledgerRows: number; foldMs: number; page: Awaited<ReturnType<typeof measureFirstPage>> | null; alerts: AlertLatency | null }) {
  const cpuRounds = r.rounds.every((t) => t.cpu) ? r.rounds.map((t) => t.cpu!) : null;
  const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
  const lines: string[] = [
    `| measure | result | bar | |`,
    `|---|---|---|---|`,
    `| triggers on ÷ off in part 1 | ${TRIGGERS.join(', ')} | | |`,
  ];
  const labels: Record<TriggerCostKey, string> = {
    batchInsertMs: `ingest, ${EVENTS.toLocaleString('en')} rows a round in 500-row INSERTs (half each mode)`,
    singleInsertMs: `ingest, ${SINGLES.toLocaleString('en')} one-row INSERTs a round (half each mode)`,
    bulkUpdateMs: `status UPDATE of every row, ${UPDATES} per mode a round`,
    deleteMs: 'DELETE of half the rows, 1 per mode a round',
  };
  for (const k of KEYS) {
    const isIngest = k === 'batchInsertMs' || k === 'singleInsertMs';
    const wall = spreadOf(r.rounds, k);
    lines.push(`| ${labels[k]}, with groups ÷ without, wall clock: median round (min–max of ${r.rounds.length}) | ${wall.text} | ${isIngest ? `≤ 1.10× | ${verdict(wall.median <= 1.1)}` : '— |'} |`);
    if (!cpuRounds) continue;
    const cpu = spreadOf(cpuRounds, k);
    lines.push(`| ${labels[k]}: the same, PostgreSQL backend CPU | ${cpu.text} | ${isIngest ? `≤ 1.10× | ${verdict(cpu.median <= 1.1)}` : '— |'} |`);
  }
  lines.push(`| folder: the last round's ${r.ledgerRows.toLocaleString('en')} ledger rows | ${Math.round(r.foldMs)} ms | — | |`);
  if (r.page) {
    const p = r.page;
    for (const order of ORDERS) {
      const x = p.byOrder[order]!;
      lines.push(`| errorGroups first page, ${order}${order === 'TREND' ? ' (trend_count)' : ''}: p50 / p95 | ${x.p50Ms} / **${x.p95Ms}** ms | p95 ≤ 50 ms | ${verdict(x.p95Ms <= 50)} |`);
    }
    lines.push(`| baseline, same data: TREND summing each group's hours at read time: p50 / p95 | ${p.trendSummed.p50Ms} / ${p.trendSummed.p95Ms} ms | — | |`);
    lines.push(`| (page data: ${p.events.toLocaleString('en')} events, ${p.groups.toLocaleString('en')} groups, ${p.runsPerOrder} requests per order; load ${Math.round(p.loadMs / 1000)} s, fold ${Math.round(p.foldMs / 1000)} s; TREND page equal to a scan: ${p.trendMatchesScan ? 'yes' : 'NO'}) | | | |`);
  }
  if (r.alerts) {
    const a = r.alerts;
    lines.push(`| REGRESSION alert, plain SQL INSERT's COMMIT → local receiver, service process: p50 / p95 / max over ${a.samples} | ${a.p50Ms} / **${a.p95Ms}** / ${a.maxMs} ms | p95 ≤ 2,000 ms | ${verdict(a.p95Ms <= 2000)} |`);
  }
  lines.push(`| load average (1 min) at start, after part 1, 2, 3 | ${load.map((x) => x.toFixed(2)).join(', ')} | | |`);
  console.log(lines.join('\n'));
}

async function measureFirstPage(client: pg.Client, h: ReturnType<typeof createDb>) {
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
  const foldMs = performance.now() - foldStart;
  for (const table of ['error_groups', 'error_group_hours', 'dead_letters']) await client.query(`vacuum analyze ${table}`);
  const server = createGraphQLServer({ db: h.db, logger: pino({ level: 'silent' }), graphiql: false, authenticate: () => LOCAL_PRINCIPAL, isReady: async () => true });
  const query = `query ($orderBy: ErrorGroupOrderField) { errorGroups(orderBy: $orderBy, first: 50, filter: { statuses: [OPEN, ACKNOWLEDGED] }) {
    totalCount edges { node { id status eventType errorKind signature count unresolvedCount recentCount firstSeen lastSeen regressedAt hourly(hours: 24) { start count } } } } }`;
  const request = async (orderBy: string) => {
    const response = await server.fetch('http://bench/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables: { orderBy } }) });
    const body = (await response.json()) as { errors?: unknown; data?: { errorGroups: { edges: { node: { id: string; recentCount: number } }[] } } };
    if (body.errors || body.data?.errorGroups.edges.length !== 50) throw new Error(`unexpected answer: ${JSON.stringify(body).slice(0, 300)}`);
    return body.data.errorGroups.edges.map((e) => e.node);
  };
  const measure = async (orderBy: string): Promise<Percentiles> => {
    const times: number[] = [];
    for (let i = 0; i < PAGE_RUNS + 3; i++) {
      const start = performance.now();
      await request(orderBy);
      if (i >= 3) times.push(performance.now() - start); // the first three warm the plans
    }
    times.sort((a, b) => a - b);
    const at = (q: number) => Number(times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)]!.toFixed(1));
    return { p50Ms: at(0.5), p95Ms: at(0.95) };
  };
  const byOrder: Record<string, Percentiles> = {};
  for (const orderBy of ORDERS) byOrder[orderBy] = await measure(orderBy);
  // The TREND page against a scan of the hours (same filter, same window).
  const trend = (await request('TREND')).map((n) => `${n.id}:${n.recentCount}`);
  const { rows: scan } = await client.query<{ k: string }>(`
    select g.id || ':' || coalesce(sum(h.count) filter (where h.bucket >= date_trunc('hour', now(), 'UTC') - interval '23 hours'), 0) as k
      from error_groups g left join error_group_hours h on h.group_id = g.id
     where g.status in ('OPEN', 'ACKNOWLEDGED')
     group by g.id order by coalesce(sum(h.count) filter (where h.bucket >= date_trunc('hour', now(), 'UTC') - interval '23 hours'), 0) desc, g.id desc limit 50`);
  const trendMatchesScan = JSON.stringify(trend) === JSON.stringify(scan.map((r) => r.k));
  // The baseline: the window an hour back makes the page sum the hours at read time.
  await client.query(`update error_group_trend_window set start = start - interval '1 hour'`);
  const trendSummed = await measure('TREND');
  await client.query(`update error_group_trend_window set start = start + interval '1 hour'`);
  const groups = (await client.query('select count(*)::int as n from error_groups')).rows[0].n as number;
  return { events: PAGE_EVENTS, groups, loadMs, foldMs, runsPerOrder: PAGE_RUNS, byOrder, trendSummed, trendMatchesScan };
}
