import { createNatsTarget } from '../src/workers/targets/nats.ts';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import { createTargetDeliver, kindMap } from '../src/workers/targets/targetKind.ts';
import { benchDatabase, cleanUp, redriveThroughLoop } from '../bench/brokerBench.ts';
import { seedDueEvents } from '../bench/seedDueEvents.ts';
import { startNatsServer } from '../test/helpers/natsServer.ts';
const N = Number(process.env.N ?? 30000);
const cleanups: Array<() => Promise<unknown>> = [];
try {
  const server = await startNatsServer();
  cleanups.push(() => server.stop());
  const { handle, pool } = await benchDatabase('postgresql://postgres@127.0.0.1:5432/postgres', 'scratch_nats', cleanups);
  const nc = await connect({ servers: [server.url] });
  cleanups.push(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const kind = createNatsTarget();
  cleanups.push(() => kind.close!());
  const kinds = kindMap([kind]);
  await upsertRetryPolicy(handle.db, 'order.placed', { allowPrivateTarget: true, target: { kind: 'nats', settings: { url: server.url, subject: 'bench.redrive' } } }, 'bench', kinds);
  for (let i = 0; i < Number(process.env.RUNS ?? 1); i++) {
    await seedDueEvents(pool, N);
    await jsm.streams.delete('BENCH').catch(() => false);
    await jsm.streams.add({ name: 'BENCH', subjects: ['bench.>'] });
    await pool.query('checkpoint');
    const t0 = performance.now();
    await redriveThroughLoop(handle.db, createTargetDeliver(kinds), N);
    console.log(`${N} in ${((performance.now() - t0) / 1000).toFixed(2)} s = ${Math.round(N / ((performance.now() - t0) / 1000))}/s`);
  }
} catch (e) { console.error(e); process.exitCode = 1; } finally { await cleanUp(cleanups); }
