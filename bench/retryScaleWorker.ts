// One process of bench:retry:scale: the retry loop as the service runs it (batch 100, concurrency
// 10, pool of 4), with a no-op in-process handler that counts what it delivered. Tells the parent
// 'ready' once connected, starts on 'go', and on 'stop' drains, reports { delivered } and exits.
import { pino } from 'pino';
import { createDb } from '../src/db/createDb.ts';
import { startRetryLoop, type RetryLoop } from '../src/workers/retry/startRetryLoop.ts';
import { BATCH } from './rawDrain.ts';

const url = process.env.BENCH_WORKER_DATABASE_URL!;
const workerId = process.env.BENCH_WORKER_ID!;
const handle = createDb(url, { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: `lazarus-scale-${workerId}` });
await handle.db.$queryRaw`select 1`;
let delivered = 0;
let loop: RetryLoop | null = null;
process.on('message', async (message: string) => {
  if (message === 'go') {
    loop = startRetryLoop({
      db: handle.db, logger: pino({ level: 'warn' }), inProcessEventTypes: ['order.placed'],
      deliver: async () => {
        delivered += 1;
        return { ok: true as const, statusCode: null, responseBody: null };
      },
      config: {
        workerId, batchSize: BATCH, concurrency: 10, leaseSeconds: 30,
        pollIntervalMs: 50, shutdownTimeoutMs: 10_000,
      },
    });
  } else if (message === 'stop') {
    await loop?.stop();
    await handle.close();
    process.send!({ delivered }, () => process.exit(0));
  }
});
process.send!('ready');
