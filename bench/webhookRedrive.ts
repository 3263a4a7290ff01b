// npm run bench:retry:webhook-raw — a redrive by signed webhook through the real retry loop, against a
// raw signed fetch loop to the same sink, same run, interleaved (A B, B A, …). Issue 36 item 6's bar:
// lazarus ≥ 0.9× raw. BENCH_EVENTS (5,000), BENCH_RUNS (3), BENCH_SINK_MS (20: how long the sink takes
// to answer), BENCH_DATABASE_URL (an admin URL; a scratch database is created and dropped).
//   lazarus  startRetryLoop at the service's defaults (batch 100, concurrency 10, pool of 4) with the
//            registry's webhook kind: the Standard Webhooks body, id, timestamp and signature per
//            event, the attempt's details recorded, then the outcome written to PostgreSQL. Timed
//            from the loop's first delivery until every event SUCCEEDED; the loop's start-up (its
//            first claim) is measured apart and printed beside each run.
//   raw      undici's fetch (the webhook kind's own client) on the same agent settings: the same
//            bodies, signed with the same secret, 10 POSTs in flight at all times (a sliding window),
//            each awaited to its response body.
//   as before / the loop alone   as in the broker benches (bench/brokerBench.ts): no bar.
// The sink answers 200 after BENCH_SINK_MS and counts what it received; after each contestant it
// must have received exactly BENCH_EVENTS POSTs. A failure anywhere stops the loop, closes the sink,
// drops the database and exits non-zero.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch } from 'undici';
import { DEFAULT_RETRY_CONCURRENCY } from '../src/config.ts';
import { upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import { createTargetDeliver, kindMap } from '../src/workers/targets/targetKind.ts';
import { createWebhookTarget, signWebhook } from '../src/workers/targets/webhook.ts';
import type { Deliver } from '../src/workers/retry/delivery.ts';
import { assertAllSucceeded, benchDatabase, cleanUp, loopReferenceContestants, redriveThroughLoop, runInterleaved, sendWindowed, waitFor } from './brokerBench.ts';
import { seedDueEvents } from './seedDueEvents.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SINK_MS = Number(process.env.BENCH_SINK_MS ?? 20);
const SECRET = 'bench-signing-secret-0123456789';

const cleanups: Array<() => Promise<unknown>> = [];
try {
  let received = 0;
  const sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => {
      received += 1;
      res.writeHead(200).end('ok');
    }, SINK_MS));
  });
  sink.listen(0, '127.0.0.1');
  await once(sink, 'listening');
  cleanups.push(() => new Promise((resolve) => {
    sink.closeAllConnections();
    sink.close(resolve);
  }));
  const url = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`;

  const { handle, pool } = await benchDatabase(adminUrl, 'lazarus_benchwebhook', cleanups);
  const kinds = kindMap([createWebhookTarget()]);
  await upsertRetryPolicy(handle.db, 'order.placed', {
    allowPrivateTarget: true, target: { kind: 'webhook', settings: { url, secret: SECRET } },
  }, 'bench', kinds);

  // The raw loop's POSTs: the bodies the webhook kind sends for the same events, built up front.
  await seedDueEvents(pool, EVENTS);
  const { rows } = await pool.query<{ id: string; payload: string; occurred_at: Date; queue: string; source: string; headers: unknown }>(
    'select id::text, payload::text, occurred_at, queue, source, headers from dead_letters order by id');
  const posts = rows.map((r) => ({
    id: r.id,
    body: `${JSON.stringify({
      id: r.id, type: 'order.placed', queue: r.queue, source: r.source, orderingKey: null, attempt: 1,
      occurredAt: r.occurred_at.toISOString(), headers: r.headers,
    }).slice(0, -1)},"payload":${r.payload}}`,
  }));

  const reset = async () => {
    received = 0;
    await pool.query('checkpoint');
  };
  const verifySink = (moved: number) => waitFor('POSTs the sink received', async () => received, moved);
  // The loop's start-up (starting it until its first delivery) is timed apart from the drain.
  let startedAt = 0;
  const firstDeliveryMs: number[] = [];
  const webhook = createTargetDeliver(kinds);
  const timed: Deliver = (event, policy, signal) => {
    if (startedAt) {
      firstDeliveryMs.push(performance.now() - startedAt);
      startedAt = 0;
    }
    return webhook(event, policy, signal);
  };

  console.log(`lazarus: startRetryLoop at the service's defaults, the webhook kind (Standard Webhooks signature)`);
  console.log(`raw: undici fetch, ${DEFAULT_RETRY_CONCURRENCY} signed POSTs in flight (sliding window), the same bodies and secret`);
  console.log(`both: a local sink that answers 200 after ${SINK_MS} ms\n`);

  await runInterleaved({
    title: `Redrive by signed webhook to a ${SINK_MS} ms sink`, events: EVENTS, runs: RUNS, bar: 0.9,
    lazarus: {
      label: 'lazarus (retry loop, webhook kind)',
      prepare: async () => {
        await seedDueEvents(pool, EVENTS);
        await reset();
      },
      run: async () => {
        startedAt = performance.now();
        return redriveThroughLoop(handle.db, timed, EVENTS);
      },
      untimedMs: () => firstDeliveryMs.at(-1)!,
      verify: async (moved) => {
        await verifySink(moved);
        await assertAllSucceeded(pool, EVENTS);
      },
    },
    raw: {
      label: 'raw signed fetch loop',
      prepare: reset,
      run: () => sendWindowed(posts, DEFAULT_RETRY_CONCURRENCY, async (p) => {
        const timestamp = Math.floor(Date.now() / 1000);
        const response = await fetch(url, {
          method: 'POST', body: p.body,
          headers: {
            'content-type': 'application/json', 'user-agent': 'lazarus-dlq', 'webhook-id': p.id, 'webhook-timestamp': String(timestamp),
            'webhook-signature': signWebhook(SECRET, p.id, timestamp, p.body),
          },
        });
        await response.text();
        if (response.status !== 200) throw new Error(`the sink answered ${response.status}`);
      }, 'raw'),
      verify: verifySink,
    },
    others: loopReferenceContestants({ db: handle.db, pool, deliver: webhook, events: EVENTS, reset, verify: verifySink }),
  });
  if (firstDeliveryMs.length) console.log(`lazarus start-up, per run: ${firstDeliveryMs.map((ms) => ms.toFixed(1)).join(', ')} ms (not in the drain's time)`);
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cleanUp(cleanups);
}
