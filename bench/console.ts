// npm run bench:console — what a person at the console feels, measured in a real headless Chromium
// against the service (its own process) on a PostgreSQL holding BENCH_ROWS dead letters:
//   1. first render of the overview and of the failures list (fresh browser context each run), next
//      to the time of the same page's GraphQL query alone (the floor: what the API costs);
//   2. commit-to-screen latency of a new failure in the live tail, over BENCH_COMMITS inserts;
//   3. long tasks in the list while BENCH_LOAD_RATE inserts/s arrive for BENCH_LOAD_SECONDS;
//   4. the initial JS bundle, gzipped and brotli;
//   5. bytes on the wire (Chromium's encoded byte counts) for a first and a repeat visit of the
//      console and of GraphiQL, next to Yoga's own GraphiQL page, which is sent whole every time.
// Env: BENCH_ADMIN_URL (a database we may CREATE DATABASE on), BENCH_ROWS (1,000,000),
// BENCH_RUNS (5), BENCH_COMMITS (50), BENCH_LOAD_RATE (1000), BENCH_LOAD_SECONDS (30), CHROMIUM_PATH;
// BENCH_KEEP_DB=1 keeps the seeded database, and a later BENCH_SKIP_SEED=1 run measures on it (a 1M
// seed takes 10–20 minutes here: seed while the machine is busy, measure when it is quiet).
import { readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { migrate } from '../src/db/migrate.ts';
import { startServiceProcess } from './serviceProcess.ts';
import { createDatabase, dropDatabase, withDatabase } from '../test/helpers/databases.ts';
import { launchChromium } from '../test/helpers/browser.ts';

const adminUrl = process.env.BENCH_ADMIN_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const rows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const runs = Number(process.env.BENCH_RUNS ?? 5);
const commits = Number(process.env.BENCH_COMMITS ?? 50);
const loadRate = Number(process.env.BENCH_LOAD_RATE ?? 1000);
const loadSeconds = Number(process.env.BENCH_LOAD_SECONDS ?? 30);
const KEEP_DB = process.env.BENCH_KEEP_DB === '1';
const SKIP_SEED = process.env.BENCH_SKIP_SEED === '1';
const dist = fileURLToPath(new URL('../web/dist', import.meta.url));

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;
const ms = (x: number) => `${x.toFixed(0)} ms`;
const kb = (x: number) => `${(x / 1024).toFixed(1)} KB`;

async function seed(pool: pg.Pool): Promise<void> {
  const chunk = 100_000;
  for (let done = 0; done < rows; done += chunk) {
    const n = Math.min(chunk, rows - done);
    await pool.query(
      `insert into dead_letters (event_type, queue, source, error_kind, error_message, status, attempts, payload, created_at)
       select (array['order.placed','invoice.sent','refund.issued','user.synced'])[1 + g % 4], 'q' || (g % 7), 'svc-' || (g % 5),
              (array['TIMEOUT','DOWNSTREAM_API','VALIDATION','CRASH']::"ErrorKind"[])[1 + g % 4],
              (array['HTTP 503 from inventory (request ' || g || ')', 'timeout after 30000 ms', 'schema mismatch on field ' || (g % 50), 'connection refused'])[1 + g % 4],
              (array['PENDING','EXHAUSTED','SUCCEEDED','RESOLVED','DISCARDED']::"DeadLetterStatus"[])[1 + g % 5], g % 6,
              jsonb_build_object('orderId', g, 'customer', jsonb_build_object('id', 'c-' || (g % 1000))),
              now() - (g % 720) * interval '1 hour' - (g % 3600) * interval '1 second'
         from generate_series($1::int + 1, $1::int + $2::int) g`,
      [done, n],
    );
  }
  // A day of delivery attempts for the charts: one for every fifth event (200,000 at 1M), over the
  // last 24 h, five targets, durations from 5 ms to ~2 s; the insert trigger fills the rollups.
  for (let done = 0; done < rows; done += chunk) {
    await pool.query(
      `insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome, target, status_code)
       select id, 1, 'bench', now() - (id * 7919 % 86400) * interval '1 second', 5 + (id * 104729 % 2000) / (1 + id % 4),
              case when id % 9 = 0 then 'FAILED' else 'SUCCEEDED' end::"AttemptOutcome", 'api-' || (id % 5) || '.example.com',
              case when id % 9 = 0 then 503 else 200 end
         from dead_letters where id > $1 and id <= $1 + $2 and id % 5 = 0`,
      [done, chunk],
    );
  }
  await pool.query('analyze dead_letters; analyze delivery_attempts; analyze delivery_attempt_rollups');
}

async function timeQuery(url: string, query: string, variables: object = {}): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  await res.json();
  return performance.now() - started;
}

/** First render: a fresh context (empty cache), navigation start → the view's data is on screen. */
async function firstRender(browser: Browser, url: string, ready: (page: Page) => Promise<unknown>): Promise<number> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const started = performance.now();
  await page.goto(url);
  await ready(page);
  const took = performance.now() - started;
  await context.close();
  return took;
}

/** Bytes Chromium received (compressed, headers included) for a first visit and then a repeat visit. */
async function wireBytes(browser: Browser, url: string, ready: (page: Page) => Promise<unknown>): Promise<[number, number]> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  let bytes = 0;
  cdp.on('Network.loadingFinished', (e: { encodedDataLength: number }) => (bytes += e.encodedDataLength));
  await page.goto(url);
  await ready(page);
  const first = bytes;
  bytes = 0;
  const again = await context.newPage();
  const cdp2 = await context.newCDPSession(again);
  await cdp2.send('Network.enable');
  cdp2.on('Network.loadingFinished', (e: { encodedDataLength: number }) => (bytes += e.encodedDataLength));
  await again.goto(url);
  await ready(again);
  const repeat = bytes;
  await context.close();
  return [first, repeat];
}

async function main(): Promise<void> {
  const name = 'lazarus_bench_console';
  const dbUrl = SKIP_SEED ? withDatabase(adminUrl, name) : (await dropDatabase(adminUrl, name), await createDatabase(adminUrl, name));
  const pool = new pg.Pool({ connectionString: dbUrl, max: 10 });
  // pool.end() resolves once its clients are told to end, not once their backends are gone; the
  // database's DROP … WITH (FORCE) right after may then terminate one, and the client reports that
  // on the pool (a CI smoke crashed on it, 57P01). Nothing is left to lose by then.
  pool.on('error', () => {});
  const table: [string, string, string][] = [];
  let service: Awaited<ReturnType<typeof startServiceProcess>> | null = null;
  let browser: Awaited<ReturnType<typeof launchChromium>> | null = null;
  try {
    await migrate(dbUrl);
    if (!SKIP_SEED) {
      const seedStarted = performance.now();
      await seed(pool);
      process.stderr.write(`seeded ${rows.toLocaleString('en-US')} rows in ${ms(performance.now() - seedStarted)}\n`);
    }
    service = await startServiceProcess(dbUrl, { GRAPHIQL_ENABLED: 'true' });
    browser = await launchChromium();
    const overviewReady = (p: Page) => Promise.all([p.getByTestId('count-total').filter({ hasText: /\d/ }).waitFor({ timeout: 60_000 }), p.getByText('Top errors').waitFor({ timeout: 60_000 }), p.getByTestId('delivery-row').first().waitFor({ timeout: 60_000 })]);
    const listReady = (p: Page) => Promise.all([p.getByTestId('row').first().waitFor({ timeout: 60_000 }), p.getByTestId('matching').filter({ hasText: /\d/ }).waitFor({ timeout: 60_000 })]);
    await firstRender(browser, `${service.url}/`, overviewReady); // warm the service's statement caches once
    const overview: number[] = [];
    const list: number[] = [];
    const overviewQuery: number[] = [];
    const listQuery: number[] = [];
    const chartQuery: Record<string, number[]> = { HOUR: [], DAY: [] };
    const charts = `query ($window: DeliveryWindow!) { deliveryStats(window: $window, groupBy: EVENT_TYPE) { stepStarts series { key deliveries successRate p50Ms p95Ms perMinute } } }`;
    const hour = Math.ceil(Date.now() / 3_600_000) * 3_600_000;
    for (let i = 0; i < runs; i++) {
      overview.push(await firstRender(browser, `${service.url}/`, overviewReady));
      list.push(await firstRender(browser, `${service.url}/failures`, listReady));
      overviewQuery.push(await timeQuery(service.url, `query ($from: DateTime!, $to: DateTime!) { deadLetterStats { oldestPendingAgeSeconds retrySuccessRate timeSeries(bucket: HOUR, from: $from, to: $to) { start count } topErrors(limit: 8) { signature count firstSeen lastSeen sampleId } } redrives(first: 10, statuses: [RUNNING, PAUSED]) { id } deliveryStats(window: HOUR, groupBy: EVENT_TYPE) { stepStarts series { key deliveries successRate p50Ms p95Ms perMinute } } }`, { from: new Date(hour - 86_400_000).toISOString(), to: new Date(hour).toISOString() }));
      for (const w of ['HOUR', 'DAY']) chartQuery[w]!.push(await timeQuery(service.url, charts, { window: w }));
      listQuery.push(await timeQuery(service.url, `{ deadLetters(first: 100) { boundedCount(limit: 10000) { count exact } pageInfo { hasNextPage endCursor } edges { node { id status eventType queue source attempts createdAt updatedAt nextAttemptAt error { kind message } } } } }`));
    }
    table.push(['overview first render (median / max)', `${ms(pct(overview, 50))} / ${ms(Math.max(...overview))}`, `≤ 1,500 ms; its queries alone: ${ms(pct(overviewQuery, 50))}`]);
    table.push(['delivery charts query alone, last hour / last day (median)', `${ms(pct(chartQuery.HOUR!, 50))} / ${ms(pct(chartQuery.DAY!, 50))}`, `from the rollups; ${(rows / 5).toLocaleString('en-US')} attempts over the day`]);
    table.push(['failures list first render (median / max)', `${ms(pct(list, 50))} / ${ms(Math.max(...list))}`, `≤ 1,500 ms; its query alone: ${ms(pct(listQuery, 50))}`]);

    // Commit to screen: the tail records when each id appears; inserts are spaced 100 ms apart.
    const tail = await browser.newPage();
    await tail.goto(`${service.url}/tail?type=bench.latency`);
    await tail.getByText('Waiting for changes').waitFor();
    await tail.evaluate(() => {
      const seen: Record<string, number> = ((window as unknown as { seen: Record<string, number> }).seen = {});
      new MutationObserver(() => {
        for (const a of document.querySelectorAll('[data-testid=tail] a')) seen[a.textContent!] ??= Date.now();
      }).observe(document.body, { childList: true, subtree: true });
    });
    await new Promise((r) => setTimeout(r, 1_000)); // the subscription is up well before the first insert
    const committed = new Map<string, number>();
    for (let i = 0; i < commits; i++) {
      const { rows: [row] } = await pool.query(`insert into dead_letters (event_type, error_message) values ('bench.latency', 'x') returning id`);
      committed.set(String(row.id), Date.now());
      await new Promise((r) => setTimeout(r, 100));
    }
    await tail.waitForFunction((n) => Object.keys((window as unknown as { seen: object }).seen).length >= n, commits, { timeout: 30_000 });
    const seen = await tail.evaluate(() => (window as unknown as { seen: Record<string, number> }).seen);
    const latency = [...committed].map(([id, at]) => seen[id]! - at);
    table.push([`commit → screen, ${commits} inserts (p50 / p95 / max)`, `${ms(pct(latency, 50))} / ${ms(pct(latency, 95))} / ${ms(Math.max(...latency))}`, 'p95 ≤ 1,000 ms']);
    await tail.close();

    // Responsiveness under load: long tasks on the list page while inserts pour in.
    const listPage = await browser.newPage();
    await listPage.goto(`${service.url}/failures`);
    await listReady(listPage);
    await listPage.evaluate(() => {
      const tasks: number[] = ((window as unknown as { tasks: number[] }).tasks = []);
      new PerformanceObserver((l) => l.getEntries().forEach((e) => tasks.push(e.duration))).observe({ type: 'longtask', buffered: false });
    });
    const loadStarted = performance.now();
    let inserted = 0;
    const deadline = loadStarted + loadSeconds * 1000;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (performance.now() < deadline) {
          const due = loadStarted + (inserted / loadRate) * 1000;
          if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
          inserted += 1;
          await pool.query(`insert into dead_letters (event_type, error_message) values ('bench.load', 'load')`);
        }
      }),
    );
    const achieved = inserted / ((performance.now() - loadStarted) / 1000);
    const tasks = await listPage.evaluate(() => (window as unknown as { tasks: number[] }).tasks);
    const pill = await listPage.getByTestId('new-pill').innerText().catch(() => '(none)');
    table.push([`list under ${achieved.toFixed(0)} inserts/s for ${loadSeconds} s: long tasks > 200 ms / longest`, `${tasks.filter((d) => d > 200).length} / ${ms(Math.max(0, ...tasks))}`, `0 over 200 ms; pill read "${pill}"`]);
    await listPage.close();

    // The initial bundle: what index.html loads before any lazy chunk.
    const html = await readFile(`${dist}/index.html`, 'utf8');
    const initial = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    let gz = 0;
    let br = 0;
    let raw = 0;
    for (const file of initial) {
      raw += (await stat(`${dist}${file}`)).size;
      gz += (await stat(`${dist}${file}.gz`)).size;
      br += (await stat(`${dist}${file}.br`)).size;
    }
    table.push(['initial JS bundle (raw / gzip / brotli)', `${kb(raw)} / ${kb(gz)} / ${kb(br)}`, 'gzip ≤ 250 KB']);

    const [consoleFirst, consoleRepeat] = await wireBytes(browser, `${service.url}/`, overviewReady);
    table.push(['console bytes on the wire: first / repeat visit', `${kb(consoleFirst)} / ${kb(consoleRepeat)}`, 'repeat ≈ nothing']);
    const graphiqlReady = (p: Page) => p.locator('.graphiql-execute-button').waitFor({ timeout: 60_000 });
    const [giFirst, giRepeat] = await wireBytes(browser, `${service.url}/graphql`, graphiqlReady);
    const yogaPage = Buffer.byteLength(renderGraphiQL({ title: 'Lazarus' }));
    table.push(['GraphiQL bytes on the wire: first / repeat visit', `${kb(giFirst)} / ${kb(giRepeat)}`, `Yoga's inline page: ${kb(yogaPage)} uncompressed, every visit`]);
  } finally {
    await browser?.close();
    await service?.stop();
    await pool.end();
    if (!KEEP_DB) await dropDatabase(adminUrl, name);
  }
  process.stdout.write(`\nbench:console, ${rows.toLocaleString('en-US')} rows\n\n| measure | result | bar / baseline |\n|---|---|---|\n`);
  for (const [a, b, c] of table) process.stdout.write(`| ${a} | ${b} | ${c} |\n`);
}

await main();
