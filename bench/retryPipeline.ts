// npm run bench:retry:pipeline — what the retry loop's pipelining buys, and where a redrive's time
// goes, against a fake target of fixed latency (no broker: the loop alone decides the rate).
// Contestants, interleaved (A B C, then C B A, …), each draining BENCH_EVENTS (10,000) seeded due
// events through startRetryLoop at the service's defaults (batch 100, concurrency 10, pool of 4):
//   lazarus                the loop as shipped: claims ahead, outcomes written every 50 ms;
//   before                 RETRY_CLAIM_AHEAD=false, the loop until 2026-11-27;
//   outcomes per batch     claims ahead, outcomes every 250 ms (one statement per batch of a fast
//                          target): tried and not shipped, kept to show why.
// The target answers after BENCH_DELIVERY_MS (3: a JetStream publish with ack under load). Each run
// prints its deliveries in flight and, per statement, how many ran and their mean and total time
// (the pool's queries timed in this process: waits for a connection and the machine's load included).
// BENCH_RUNS (3), BENCH_DATABASE_URL (an admin URL; a scratch database is created and dropped).
import pg from 'pg';
import { DEFAULT_RETRY_BATCH_SIZE, DEFAULT_RETRY_CONCURRENCY } from '../src/config.ts';
import { upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import { TARGET_KINDS } from '../src/workers/targets/registry.ts';
import type { Deliver } from '../src/workers/retry/delivery.ts';
import { assertAllSucceeded, BEFORE_PIPELINE, benchDatabase, cleanUp, redriveThroughLoop, runInterleaved, type LoopOptions } from './brokerBench.ts';
import { seedDueEvents } from './seedDueEvents.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const DELIVERY_MS = Number(process.env.BENCH_DELIVERY_MS ?? 3);

const cleanups: Array<() => Promise<unknown>> = [];
try {
  const { handle, pool } = await benchDatabase(adminUrl, 'lazarus_benchpipeline', cleanups);
  // The policy's target is never called: the bench's own deliver stands in for it.
  await upsertRetryPolicy(handle.db, 'order.placed', {
    allowPrivateTarget: true, target: { kind: 'webhook', settings: { url: 'http://127.0.0.1:9/unused' } },
  }, 'bench', TARGET_KINDS);

  const statements = timeStatements(handle.pool);
  const deliver: Deliver = async () => {
    await new Promise((resolve) => setTimeout(resolve, DELIVERY_MS));
    return { ok: true, statusCode: null, responseBody: null };
  };
  const contestant = (label: string, options: LoopOptions) => ({
    label,
    prepare: async () => {
      await seedDueEvents(pool, EVENTS);
      await pool.query('checkpoint');
      statements.clear();
    },
    run: async () => {
      const moved = await redriveThroughLoop(handle.db, deliver, EVENTS, options);
      statements.print();
      return moved;
    },
    verify: () => assertAllSucceeded(pool, EVENTS),
  });

  console.log(`startRetryLoop batch ${DEFAULT_RETRY_BATCH_SIZE}, concurrency ${DEFAULT_RETRY_CONCURRENCY}, pool of 4; a target answering after ${DELIVERY_MS} ms\n`);
  await runInterleaved({
    title: `Retry loop pipelining (a ${DELIVERY_MS} ms target)`, events: EVENTS, runs: RUNS, bar: 1,
    lazarus: contestant('lazarus (claim ahead, outcomes every 50 ms)', {}),
    raw: contestant('before (claim ahead off)', BEFORE_PIPELINE),
    others: [contestant('claim ahead, outcomes per batch (every 250 ms)', { outcomeFlushMs: 250 })],
  });
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cleanUp(cleanups);
}

/** Wraps the pool's query to count and time each statement, by its prepared name or its first words. */
function timeStatements(target: pg.Pool) {
  const stats = new Map<string, { n: number; ms: number }>();
  const query = target.query.bind(target) as (...args: unknown[]) => Promise<unknown>;
  (target as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args) => {
    const q = args[0] as string | { name?: string; text?: string };
    const key = typeof q === 'string' ? q.slice(0, 40) : (q.name ?? q.text?.replace(/\s+/g, ' ').trim().slice(0, 40) ?? '?');
    const started = performance.now();
    try {
      return await query(...args);
    } finally {
      const s = stats.get(key) ?? { n: 0, ms: 0 };
      s.n += 1;
      s.ms += performance.now() - started;
      stats.set(key, s);
    }
  };
  return {
    clear: () => stats.clear(),
    print: () => {
      for (const [key, s] of [...stats].sort((a, b) => b[1].ms - a[1].ms)) {
        console.log(`    ${key.padEnd(40)} ${String(s.n).padStart(5)} × ${(s.ms / s.n).toFixed(1).padStart(6)} ms = ${(s.ms / 1000).toFixed(2)} s`);
      }
    },
  };
}
