// npm run bench:broker:nats — a redrive to NATS JetStream through the real retry loop and the nats
// target kind, against a raw JetStream publisher, same run, interleaved (A B, B A, …). Issue 34's
// bar: lazarus ≥ 0.8× raw. BENCH_EVENTS (50,000), BENCH_RUNS (3), BENCH_DATABASE_URL (an admin URL;
// a scratch database is created and dropped).
//   lazarus  startRetryLoop at the service's defaults (batch 100, concurrency 10, pool of 4) with
//            the nats kind: a JetStream publish per event, waiting for the stream's ack, then the
//            outcome written to PostgreSQL. Timed from starting the loop until every event SUCCEEDED.
//   raw      @nats-io/jetstream's js.publish on one connection: the same bodies, the same
//            Nats-Msg-Id and headers, each awaited on its ack, 10 in flight at all times (a sliding
//            window: no pause between batches of 100).
//            Shown beside it, no bar: the same with noAsyncTraces (no per-request stack captured), as
//            the nats kind's connections run.
//   as before the same redrive with RETRY_CLAIM_AHEAD=false (the loop until 2026-11-27), and the
//            loop alone (a delivery that does nothing): shown, no bar.
// The server is the bench's own: nats-server -js on a free port with a temporary storage directory
// (test/helpers/natsServer.ts), killed and removed at the end. One file-storage stream takes the
// subject; it is deleted and created again before each contestant (untimed), so no run's message
// ids fall in the last one's duplicate window, and after each it must hold exactly BENCH_EVENTS
// messages, none a duplicate. A failure anywhere stops the loop, closes connections, stops the
// server, drops the database and exits non-zero.
import { readFileSync } from 'node:fs';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import { DEFAULT_RETRY_BATCH_SIZE, DEFAULT_RETRY_CONCURRENCY } from '../src/config.ts';
import { upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import { createNatsTarget } from '../src/workers/targets/nats.ts';
import { createTargetDeliver, kindMap } from '../src/workers/targets/targetKind.ts';
import { startNatsServer } from '../test/helpers/natsServer.ts';
import { assertAllSucceeded, benchDatabase, cleanUp, databaseCpuMs, loopReferenceContestants, redriveThroughLoop, runInterleaved, sendWindowed } from './brokerBench.ts';
import { seedDueEvents } from './seedDueEvents.ts';
import { cpuMsOf } from './triggerCost.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const STREAM = 'BENCH';
const SUBJECT = 'bench.redrive';

const cleanups: Array<() => Promise<unknown>> = [];
try {
  const server = await startNatsServer();
  cleanups.push(() => server.stop());
  const { handle, pool } = await benchDatabase(adminUrl, 'lazarus_benchnats', cleanups);

  const nc = await connect({ servers: [server.url] });
  cleanups.push(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  // The same without the client's per-request stack traces, as the nats kind's connections run.
  const ncNoTraces = await connect({ servers: [server.url], noAsyncTraces: true });
  cleanups.push(() => ncNoTraces.close());
  const jsNoTraces = jetstream(ncNoTraces);

  const natsKind = createNatsTarget();
  cleanups.push(() => natsKind.close!());
  const kinds = kindMap([natsKind]);
  await upsertRetryPolicy(handle.db, 'order.placed', {
    allowPrivateTarget: true, target: { kind: 'nats', settings: { url: server.url, subject: SUBJECT } },
  }, 'bench', kinds);

  // The raw publisher's messages: what the nats kind sends for the same events, built once up front.
  await seedDueEvents(pool, EVENTS);
  const { rows } = await pool.query<{ id: string; payload: string; queue: string; source: string }>(
    'select id::text, payload::text, queue, source from dead_letters order by id');
  const messages = rows.map((r) => {
    const h = natsHeaders();
    h.set('Content-Type', 'application/json');
    h.set('Lazarus-Id', r.id);
    h.set('Lazarus-Attempt', '1');
    h.set('Lazarus-Event-Type', 'order.placed');
    h.set('Lazarus-Queue', r.queue);
    h.set('Lazarus-Source', r.source);
    return { body: r.payload, msgID: r.id, headers: h };
  });

  const freshStream = async () => {
    await jsm.streams.delete(STREAM).catch(() => false);
    await jsm.streams.add({ name: STREAM, subjects: ['bench.>'] });
    await pool.query('checkpoint');
  };
  const verifyStream = async (moved: number) => {
    const { state } = await jsm.streams.info(STREAM);
    if (state.messages !== moved) throw new Error(`the stream holds ${state.messages} messages, want ${moved}`);
  };
  const version = (pkg: string) => (JSON.parse(readFileSync(new URL(`../node_modules/${pkg}/package.json`, import.meta.url), 'utf8')) as { version: string }).version;

  const rawRun = (client: typeof js, label: string) => () => sendWindowed(messages, DEFAULT_RETRY_CONCURRENCY, async (m) => {
    const ack = await client.publish(SUBJECT, m.body, { msgID: m.msgID, headers: m.headers });
    if (ack.duplicate) throw new Error(`message ${m.msgID} was a duplicate`);
  }, label);

  console.log(`lazarus: startRetryLoop batch ${DEFAULT_RETRY_BATCH_SIZE}, concurrency ${DEFAULT_RETRY_CONCURRENCY}, the nats kind (publish with ack, Nats-Msg-Id)`);
  console.log(`raw: @nats-io/jetstream ${version('@nats-io/jetstream')} js.publish, ${DEFAULT_RETRY_CONCURRENCY} in flight (sliding window), the same bodies, Nats-Msg-Id and headers`);
  console.log(`both: subject ${SUBJECT} → file-storage stream ${STREAM} on nats-server -js at ${server.url}\n`);

  await runInterleaved({
    title: 'Redrive to NATS JetStream (publish with ack)', events: EVENTS, runs: RUNS, bar: 0.8, brokerCpuMs: async () => (server.pid === null ? null : cpuMsOf(server.pid)),
    lazarus: {
      label: 'lazarus (retry loop, nats kind)',
      prepare: async () => {
        await seedDueEvents(pool, EVENTS);
        await freshStream();
      },
      run: () => redriveThroughLoop(handle.db, createTargetDeliver(kinds), EVENTS),
      databaseCpuMs: () => databaseCpuMs(pool, 'lazarus-retry'),
      verify: async (moved) => {
        await verifyStream(moved);
        await assertAllSucceeded(pool, EVENTS);
      },
    },
    raw: { label: 'raw JetStream publisher', prepare: freshStream, run: rawRun(js, 'raw'), verify: verifyStream },
    // The raw publisher with the kind's connection setting, what claiming ahead bought, and the loop's own ceiling.
    others: [{ label: 'raw JetStream publisher, noAsyncTraces', prepare: freshStream, run: rawRun(jsNoTraces, 'raw, noAsyncTraces'), verify: verifyStream },
      ...loopReferenceContestants({ db: handle.db, pool, deliver: createTargetDeliver(kinds), events: EVENTS, reset: freshStream, verify: verifyStream })],
  });
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cleanUp(cleanups);
}
