import amqp from 'amqplib';
import { createDb } from '../src/db/createDb.ts';
import { upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import { createAmqpTarget } from '../src/workers/targets/amqp.ts';
import { createTargetDeliver, kindMap } from '../src/workers/targets/targetKind.ts';
import { benchDatabase, cleanUp, createBenchVhost, redriveThroughLoop } from '../bench/brokerBench.ts';
import { seedDueEvents } from '../bench/seedDueEvents.ts';
const N = Number(process.env.N ?? 30000);
const cleanups: Array<() => Promise<unknown>> = [];
try {
  const vhost = await createBenchVhost();
  cleanups.push(vhost.drop);
  const { handle, pool, dbUrl } = await benchDatabase('postgresql://postgres@127.0.0.1:5432/postgres', 'scratch_amqp', cleanups);
  const admin = await amqp.connect(vhost.url);
  cleanups.push(() => admin.close());
  const ch = await admin.createChannel();
  await ch.assertQueue('redrive', { durable: true });
  const kind = createAmqpTarget();
  cleanups.push(() => kind.close!());
  const kinds = kindMap([kind]);
  await upsertRetryPolicy(handle.db, 'order.placed', { allowPrivateTarget: true, target: { kind: 'amqp', settings: { url: vhost.url, exchange: '', routingKey: 'redrive' } } }, 'bench', kinds);
  const name = new URL(dbUrl).pathname.slice(1);
  if (process.env.ASYNC) await pool.query(`alter database ${name} set synchronous_commit = off`);
  const h2 = createDb(dbUrl, { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: 'lazarus-retry' });
  cleanups.push(() => h2.close());
  for (let i = 0; i < Number(process.env.RUNS ?? 1); i++) {
    await seedDueEvents(pool, N);
    await ch.purgeQueue('redrive');
    await pool.query('checkpoint');
    const t0 = performance.now();
    let deliver = createTargetDeliver(kinds);
    if (process.env.RAWDELIVER) {
      const conn = await amqp.connect(vhost.url);
      const confirms = await conn.createConfirmChannel();
      const body = Buffer.from(JSON.stringify({ hello: 'x'.repeat(900) }));
      deliver = (event) => new Promise((resolve, reject) => {
        confirms.publish('', 'redrive', body, { persistent: true, messageId: String(event.id), headers: { 'x-lazarus-id': String(event.id) } }, (e: unknown) => e ? reject(e) : resolve({ ok: true, statusCode: null, responseBody: null }));
      });
      cleanups.push(() => conn.close());
    }
    await redriveThroughLoop(h2.db, deliver, N);
    console.log(`${N} in ${((performance.now() - t0) / 1000).toFixed(2)} s = ${Math.round(N / ((performance.now() - t0) / 1000))}/s`);
  }
} catch (e) { console.error(e); process.exitCode = 1; } finally { await cleanUp(cleanups); }
