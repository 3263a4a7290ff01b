import amqp from 'amqplib';
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
  const { handle, pool } = await benchDatabase('postgresql://postgres@127.0.0.1:5432/postgres', 'scratch_amqp', cleanups);
  const admin = await amqp.connect(vhost.url);
  cleanups.push(() => admin.close());
  const ch = await admin.createChannel();
  await ch.assertQueue('redrive', { durable: true });
  const kind = createAmqpTarget();
  cleanups.push(() => kind.close!());
  const kinds = kindMap([kind]);
  await upsertRetryPolicy(handle.db, 'order.placed', { allowPrivateTarget: true, target: { kind: 'amqp', settings: { url: vhost.url, exchange: '', routingKey: 'redrive' } } }, 'bench', kinds);
  for (let i = 0; i < Number(process.env.RUNS ?? 1); i++) {
    await seedDueEvents(pool, N);
    await ch.purgeQueue('redrive');
    await pool.query('checkpoint');
    const t0 = performance.now();
    await redriveThroughLoop(handle.db, createTargetDeliver(kinds), N);
    console.log(`${N} in ${((performance.now() - t0) / 1000).toFixed(2)} s = ${Math.round(N / ((performance.now() - t0) / 1000))}/s`);
  }
} catch (e) { console.error(e); process.exitCode = 1; } finally { await cleanUp(cleanups); }
