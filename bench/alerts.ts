// npm run bench:alerts — time from the commit of a transaction that raises an alert to the local
// receiver's request, p50/p95 over BENCH_ALERTS (50) alerts raised one after another, each in the
// transaction of a failing INSERT (what the error-group triggers will do for a regression):
//   BEGIN; INSERT INTO dead_letters …; SELECT lazarus_raise_alert('REGRESSION', 'group:<n>', …); COMMIT
// Once with the deliverer woken by NOTIFY lazarus_alerts, once with polling alone (1 s), in the
// same run. BENCH_DATABASE_URL (admin URL).
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { createChangeListener } from '../src/live/changeListener.ts';
import { startAlertDelivery } from '../src/workers/retry/alertDelivery.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const ALERTS = Number(process.env.BENCH_ALERTS ?? 50);
const logger = pino({ level: 'warn' });

// webhook-id → when its first request arrived; delivery is at-least-once, so a repeat is ignored.
const arrivals = new Map<string, number>();
const waiting = new Map<string, () => void>();
const sink = createServer((req, res) => {
  const id = String(req.headers['webhook-id']);
  if (!arrivals.has(id)) arrivals.set(id, performance.now());
  req.resume();
  req.on('end', () => {
    res.writeHead(200).end('ok');
    waiting.get(id)?.();
  });
});
sink.listen(0, '127.0.0.1');
await once(sink, 'listening');
const target = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/alerts`;

const name = `lazarus_benchalerts_${process.pid}`;
const dbUrl = await createDatabase(adminUrl, name);
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

try {
  await migrate(dbUrl, { logger });
  const handle = createDb(dbUrl, { poolMax: 4, acquireTimeoutMs: 5_000, statementTimeoutMs: 15_000, applicationName: 'bench-alerts' });
  await handle.pool.query(
    `insert into alert_rules (name, trigger, target_url, signing_secret, allow_private_target) values ('regressions', 'REGRESSION', $1, 'bench-signing-secret-0123456789', true)`,
    [target]);
  const listener = createChangeListener({ url: dbUrl, logger });
  await listener.start();

  const rows: string[] = [];
  for (const [label, woken] of [['woken by NOTIFY', true], ['polling only (1 s)', false]] as const) {
    const delivery = startAlertDelivery({
      db: handle.db, logger, pollIntervalMs: 1_000,
      ...(woken && { wake: (fn: () => void) => (listener.onAlertsRaised(fn), () => {}) }),
    });
    const latencies: number[] = [];
    const client = await handle.pool.connect();
    try {
      for (let i = 0; i < ALERTS; i++) {
        const group = `${label}:${i}`;
        await client.query('begin');
        await client.query(`insert into dead_letters (event_type, payload, error_message) values ('order.placed', '{}', 'HTTP 503')`);
        const { rows: [raised] } = await client.query<{ id: string }>(
          `select lazarus_raise_alert('REGRESSION', $1, 'group regressed', '{}') as id`, [group]);
        const webhookId = `alert_${raised!.id}`;
        const done = new Promise<void>((resolve) => waiting.set(webhookId, resolve));
        await client.query('commit');
        const committedAt = performance.now();
        await done;
        latencies.push(arrivals.get(webhookId)! - committedAt);
      }
    } finally {
      client.release();
      await delivery.stop();
    }
    latencies.sort((a, b) => a - b);
    rows.push(`| ${label} | ${ALERTS} | ${percentile(latencies, 50).toFixed(1)} | ${percentile(latencies, 95).toFixed(1)} | ${latencies.at(-1)!.toFixed(1)} |`);
  }
  console.log('| commit → receiver | alerts | p50 ms | p95 ms | max ms |');
  console.log('|---|---:|---:|---:|---:|');
  for (const row of rows) console.log(row);
  await listener.stop();
  await handle.close();
} finally {
  sink.closeAllConnections();
  sink.close();
  await dropDatabase(adminUrl, name);
}
