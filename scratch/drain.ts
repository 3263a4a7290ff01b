import pg from 'pg';
import { createDb } from '../src/db/createDb.ts';
import { benchDatabase, cleanUp, databaseCpuMs, redriveThroughLoop } from '../bench/brokerBench.ts';
import { seedDueEvents } from '../bench/seedDueEvents.ts';
import { upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import { createWebhookTarget } from '../src/workers/targets/webhook.ts';
import { kindMap } from '../src/workers/targets/targetKind.ts';
const N = Number(process.env.N ?? 50000);
const cleanups: Array<() => Promise<unknown>> = [];
try {
  const { handle, pool, dbUrl } = await benchDatabase('postgresql://postgres@127.0.0.1:5432/postgres', 'scratch_drain', cleanups);
  await upsertRetryPolicy(handle.db, 'order.placed', { allowPrivateTarget: true, target: { kind: 'webhook', settings: { url: 'http://127.0.0.1:9/x' } } } as any, 'bench', kindMap([createWebhookTarget()]));
  const name = new URL(dbUrl).pathname.slice(1);
  if (process.env.NOJIT) await pool.query(`alter database ${name} set jit = off`);
  if (process.env.LOGALL) await pool.query(`alter database ${name} set log_min_duration_statement = 0`);
  if (process.env.EXPLAIN) await pool.query(`alter database ${name} set session_preload_libraries = 'auto_explain'; alter database ${name} set auto_explain.log_min_duration = ${process.env.EXPLAIN}; alter database ${name} set auto_explain.log_analyze = on; alter database ${name} set auto_explain.log_buffers = on`);
  const h2 = createDb(dbUrl, { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: 'lazarus-retry' });
  cleanups.push(() => h2.close());
  for (let i = 0; i < Number(process.env.RUNS ?? 1); i++) {
    await seedDueEvents(pool, N);
    await pool.query('checkpoint');
    const c0 = await databaseCpuMs(pool, 'lazarus-retry');
    const t0 = performance.now();
    await redriveThroughLoop(h2.db, async () => ({ ok: true, statusCode: null, responseBody: null }), N);
    const s = (performance.now() - t0) / 1000;
    const c1 = await databaseCpuMs(pool, 'lazarus-retry');
    console.log(`${N} in ${s.toFixed(2)} s = ${Math.round(N / s)}/s, DB CPU ${(((c1 ?? 0) - (c0 ?? 0)) * 1000 / N).toFixed(0)} µs/event`);
  }
} catch (e) { console.error(e); process.exitCode = 1; } finally { await cleanUp(cleanups); }
