// npm run bench:broker:amqp — a redrive to RabbitMQ through the real retry loop and the amqp target
// kind, against a raw amqplib publisher, same run, interleaved (A B, B A, …). Issue 34's bar:
// lazarus ≥ 0.8× raw. BENCH_EVENTS (50,000), BENCH_RUNS (3), BENCH_DATABASE_URL (an admin URL; a
// scratch database is created and dropped), RABBITMQ_HOST (127.0.0.1:5672, guest/guest).
//   lazarus  startRetryLoop at the service's defaults (batch 100, concurrency 10, pool of 4) with
//            the registry's amqp kind: a persistent message per event, published on the kind's shared
//            confirm channel and counted delivered when the broker confirms it, then the outcome
//            written to PostgreSQL. Timed from starting the loop until every event SUCCEEDED.
//   raw      amqplib on one confirm channel: the same bodies (the events' payloads as their stored JSON text) and the
//            same properties and headers, persistent, each publish awaited on its confirm callback,
//            with 10 in flight at all times (a sliding window: no pause between batches of 100), at
//            amqplib's default socket options; shown beside it, no bar: the same with noDelay (Nagle
//            off), as the amqp kind's connections run.
//   as before the same redrive with RETRY_CLAIM_AHEAD=false (the loop until 2026-11-27), and the
//            loop alone (a delivery that does nothing): shown, no bar.
// Both publish through the default exchange to one durable queue in a vhost of the bench's own
// (rabbitmqctl add_vhost, deleted at the end). Before each contestant, untimed: the events are
// seeded afresh (bench/seedDueEvents.ts: ~1 KB payloads) and the queue purged; after it, the queue
// must hold exactly BENCH_EVENTS messages. A failure anywhere stops the loop, closes connections,
// deletes the vhost, drops the database and exits non-zero.
import { readFileSync } from 'node:fs';
import amqp from 'amqplib';
import { DEFAULT_RETRY_BATCH_SIZE, DEFAULT_RETRY_CONCURRENCY } from '../src/config.ts';
import { upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import { createAmqpTarget } from '../src/workers/targets/amqp.ts';
import { createTargetDeliver, kindMap } from '../src/workers/targets/targetKind.ts';
import { assertAllSucceeded, benchDatabase, cleanUp, createBenchVhost, databaseCpuMs, loopReferenceContestants, processCpuMs, redriveThroughLoop, runInterleaved, sendWindowed, waitFor } from './brokerBench.ts';
import { seedDueEvents } from './seedDueEvents.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const QUEUE = 'redrive';

const cleanups: Array<() => Promise<unknown>> = [];
try {
  const vhost = await createBenchVhost();
  cleanups.push(vhost.drop);
  const { handle, pool } = await benchDatabase(adminUrl, 'lazarus_benchamqp', cleanups);

  const admin = await amqp.connect(vhost.url);
  cleanups.push(() => admin.close());
  const channel = await admin.createChannel();
  await channel.assertQueue(QUEUE, { durable: true });
  const depth = async () => (await channel.checkQueue(QUEUE)).messageCount;

  const amqpKind = createAmqpTarget();
  cleanups.push(() => amqpKind.close!());
  const kinds = kindMap([amqpKind]);
  await upsertRetryPolicy(handle.db, 'order.placed', {
    allowPrivateTarget: true, target: { kind: 'amqp', settings: { url: vhost.url, exchange: '', routingKey: QUEUE } },
  }, 'bench', kinds);

  // The raw publisher's messages: what the amqp kind sends for the same events (its internal
  // return tag aside), built once up front from the seeded rows.
  await seedDueEvents(pool, EVENTS);
  const { rows } = await pool.query<{ id: string; payload: string; occurred_at: Date; queue: string; source: string }>(
    'select id::text, payload::text, occurred_at, queue, source from dead_letters order by id');
  const messages = rows.map((r) => ({
    body: Buffer.from(r.payload),
    options: {
      persistent: true, messageId: r.id, contentType: 'application/json', type: 'order.placed', timestamp: Math.floor(r.occurred_at.getTime() / 1000),
      headers: { 'x-lazarus-id': r.id, 'x-lazarus-attempt': 1, 'x-lazarus-event-type': 'order.placed', 'x-lazarus-queue': r.queue, 'x-lazarus-source': r.source },
    } satisfies amqp.Options.Publish,
  }));
  const rawConnection = await amqp.connect(vhost.url);
  cleanups.push(() => rawConnection.close());
  const confirms = await rawConnection.createConfirmChannel();
  // The same with Nagle's algorithm off, as the amqp kind's connections have it (amqplib's default is on).
  const rawNoDelay = await amqp.connect(vhost.url, { noDelay: true });
  cleanups.push(() => rawNoDelay.close());
  const confirmsNoDelay = await rawNoDelay.createConfirmChannel();
  const rawRun = (channel: amqp.ConfirmChannel, label: string) => () => sendWindowed(messages, DEFAULT_RETRY_CONCURRENCY, (m) => new Promise<void>((resolve, reject) => {
    channel.publish('', QUEUE, m.body, m.options, (error: unknown) => (error ? reject(error as Error) : resolve()));
  }), label);

  const quiet = async () => {
    await channel.purgeQueue(QUEUE);
    await pool.query('checkpoint');
  };
  const verifyQueue = (moved: number) => waitFor('messages in the queue', depth, moved);

  console.log(`lazarus: startRetryLoop batch ${DEFAULT_RETRY_BATCH_SIZE}, concurrency ${DEFAULT_RETRY_CONCURRENCY}, the amqp kind (persistent, publisher confirms)`);
  console.log(`raw: amqplib ${amqpVersion()} confirm channel, ${DEFAULT_RETRY_CONCURRENCY} publishes in flight (sliding window), the same bodies, properties and headers`);
  console.log(`both: default exchange → durable queue ${QUEUE} in vhost ${vhost.name}\n`);

  await runInterleaved({
    title: 'Redrive to RabbitMQ (publisher confirms)', events: EVENTS, runs: RUNS, bar: 0.8, brokerCpuMs: () => processCpuMs('beam.smp'),
    lazarus: {
      label: 'lazarus (retry loop, amqp kind)',
      prepare: async () => {
        await seedDueEvents(pool, EVENTS);
        await quiet();
      },
      run: () => redriveThroughLoop(handle.db, createTargetDeliver(kinds), EVENTS),
      databaseCpuMs: () => databaseCpuMs(pool, 'lazarus-retry'),
      verify: async (moved) => {
        await verifyQueue(moved);
        await assertAllSucceeded(pool, EVENTS);
      },
    },
    raw: {
      label: 'raw amqplib publisher',
      prepare: quiet,
      run: rawRun(confirms, 'raw'),
      verify: verifyQueue,
    },
    // The raw publisher with the kind's socket setting, what claiming ahead bought, and the loop's own ceiling.
    others: [{ label: 'raw amqplib publisher, noDelay', prepare: quiet, run: rawRun(confirmsNoDelay, 'raw, noDelay'), verify: verifyQueue },
      ...loopReferenceContestants({ db: handle.db, pool, deliver: createTargetDeliver(kinds), events: EVENTS, reset: quiet, verify: verifyQueue })],
  });
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cleanUp(cleanups);
}

function amqpVersion(): string {
  return (JSON.parse(readFileSync(new URL('../node_modules/amqplib/package.json', import.meta.url), 'utf8')) as { version: string }).version;
}
