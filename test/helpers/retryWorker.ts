// A retry worker as its own process, for multi-process and kill -9 tests.
// argv[2]: JSON { databaseUrl, workerId, inProcess (no-op handler for 'order.placed'), batchSize, concurrency, leaseSeconds, pollIntervalMs }
import { pino } from 'pino';
import { createDb } from '../../src/db/createDb.ts';
import { createDeliver, type DeadLetterHandler } from '../../src/workers/retry/delivery.ts';
import { startRetryLoop } from '../../src/workers/retry/startRetryLoop.ts';
import { createWebhookDeliver } from '../../src/workers/targets/webhook.ts';

const options = JSON.parse(process.argv[2]!) as {
  databaseUrl: string; workerId: string; inProcess: boolean; batchSize: number; concurrency: number; leaseSeconds: number; pollIntervalMs: number;
};
const handle = createDb(options.databaseUrl, { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 30_000, applicationName: 'lazarus-retry' });
const handlers = new Map<string, DeadLetterHandler>(options.inProcess ? [['order.placed', async () => {}]] : []);
const loop = startRetryLoop({
  db: handle.db,
  deliver: createDeliver(handlers, createWebhookDeliver()),
  inProcessEventTypes: [...handlers.keys()],
  logger: pino({ level: 'warn' }, pino.destination(2)),
  config: {
    workerId: options.workerId, batchSize: options.batchSize, concurrency: options.concurrency, leaseSeconds: options.leaseSeconds,
    pollIntervalMs: options.pollIntervalMs, shutdownTimeoutMs: 5_000,
  },
});
loop.events.on('passCompleted', (s: { claimed: number; leaseLost: number }) => {
  if (s.claimed > options.batchSize) process.stdout.write(`OVERCLAIM ${s.claimed}\n`);
  if (s.leaseLost > 0) process.stdout.write(`LOST ${s.leaseLost}\n`);
});
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void loop.stop().then(() => handle.close()).then(() => process.exit(0));
});
