// npm run bench:broker:ingest — ingest from a RabbitMQ dead-letter queue through the RabbitMQ bridge
// against a raw consume-and-INSERT loop, same run, interleaved (A B, B A, …). Issue 34's bar:
// lazarus ≥ 0.8× raw. BENCH_EVENTS (50,000), BENCH_RUNS (3), BENCH_DATABASE_URL (an admin URL; two
// scratch databases are created and dropped), RABBITMQ_HOST (127.0.0.1:5672, guest/guest).
// The queue is what a user has: exchange `shop` (topic) → durable work queue whose dead-letter
// exchange is `dlx` (fanout) → durable queue `dlq`. Before each contestant, untimed: BENCH_EVENTS
// persistent JSON messages (~1 KB, content type, message id, app id and a header) are published with
// confirms, then rejected from the work queue (nack, no requeue), so each reaches `dlq` with its
// x-death; the bench waits until `dlq` holds them all.
//   lazarus  the bridge as the service runs it (workers/jobs.ts: startBridge with the service's
//            database handle and write rules): the rabbitmq kind at its default prefetch 100, each
//            batch validated and stored in one statement with its RECORDED history rows, ON CONFLICT
//            (dedupe_key) DO NOTHING, the batch acked after the commit (one `multiple` ack where it
//            settles nothing else, src/workers/bridges/rabbitmq.ts). Timed from starting the bridge
//            until every message is recorded.
//   raw      amqplib consume at the same prefetch on one channel; whatever has arrived (up to the
//            prefetch) goes into one multi-row INSERT … VALUES … ON CONFLICT (dedupe_key) DO NOTHING
//            of the same columns (event type and queue from x-death, the body as jsonb, properties and
//            headers, error text, a dedupe key from the vhost, queue and a SHA-256 of the body), then
//            one ack of the batch (multiple: true) after the commit.
// Each writes into a freshly migrated database of its own (triggers and indexes on), emptied before
// each run; after each run the database must hold BENCH_EVENTS rows and `dlq` be empty. Each run
// prints its batches and, per batch, the milliseconds in the INSERT and in everything else.
import { createHash } from 'node:crypto';
import amqp from 'amqplib';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { createOutageLog } from '../src/db/outageLog.ts';
import { createBridgeBoard, resolveBridges } from '../src/workers/bridges/bridgeBoard.ts';
import { DEFAULT_PREFETCH } from '../src/workers/bridges/rabbitmq.ts';
import { BRIDGE_KINDS } from '../src/workers/bridges/registry.ts';
import { startBridge, type BridgePassSummary } from '../src/workers/bridges/runBridge.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import { cleanUp, createBenchVhost, databaseCpuMs, processCpuMs, runInterleaved, waitFor } from './brokerBench.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PREFETCH = DEFAULT_PREFETCH;
const logger = pino({ level: 'warn' });

const cleanups: Array<() => Promise<unknown>> = [];
try {
  const vhost = await createBenchVhost();
  cleanups.push(vhost.drop);
  const database = async (suffix: string) => {
    const name = `lazarus_benchingest_${suffix}_${process.pid}`;
    const url = await createDatabase(adminUrl, name);
    cleanups.push(() => dropDatabase(adminUrl, name));
    await migrate(url, { logger });
    const pool = new pg.Pool({ connectionString: url, max: 1, application_name: 'bench' });
    pool.on('error', () => {});
    cleanups.push(() => pool.end());
    const rows = async () => (await pool.query<{ n: number }>('select count(*)::int as n from dead_letters')).rows[0]!.n;
    const empty = async () => {
      await pool.query('truncate dead_letters, dead_letter_actions');
      await pool.query('vacuum analyze dead_letters');
      await pool.query('checkpoint');
    };
    return { url, pool, rows, empty, databaseCpuMs: (app: string) => databaseCpuMs(pool, app) };
  };
  const lazarusDb = await database('lazarus');
  const rawDb = await database('raw');

  const admin = await amqp.connect(vhost.url);
  cleanups.push(() => admin.close());
  const channel = await admin.createConfirmChannel();
  await channel.assertExchange('shop', 'topic', { durable: true });
  await channel.assertExchange('dlx', 'fanout', { durable: true });
  await channel.assertQueue('dlq', { durable: true });
  await channel.bindQueue('dlq', 'dlx', '');
  await channel.assertQueue('work', { durable: true, arguments: { 'x-dead-letter-exchange': 'dlx' } });
  await channel.bindQueue('work', 'shop', '#');
  const depth = async (queue: string) => (await channel.checkQueue(queue)).messageCount;

  const body = (g: number) => Buffer.from(JSON.stringify({
    orderId: g, customer: `c-${g}`, lines: Array.from({ length: 12 }, (_, k) => ({ sku: `SKU-${k + 1}`, qty: k + 1, note: 'x'.repeat(40) })),
  }));
  /** Fills `dlq` with EVENTS messages that died by rejection in `work`. */
  let filled = 0;
  const fillDeadLetterQueue = async () => {
    await channel.purgeQueue('dlq');
    for (let g = 1; g <= EVENTS; g++) {
      const n = filled + g;
      if (!channel.publish('shop', 'order.placed', body(n), {
        persistent: true, contentType: 'application/json', messageId: `m-${n}`, appId: 'checkout', headers: { trace: `t-${n}` },
      })) await new Promise((resolve) => channel.once('drain', resolve));
      if (g % 1_000 === 0) await channel.waitForConfirms();
    }
    await channel.waitForConfirms();
    filled += EVENTS;
    const rejecter = await admin.createChannel();
    await rejecter.prefetch(500);
    let rejected = 0;
    await new Promise<void>((resolve, reject) => {
      void rejecter.consume('work', (m) => {
        if (!m) return reject(new Error('the work queue consumer was cancelled'));
        rejected += 1;
        if (rejected % 500 === 0 || rejected === EVENTS) rejecter.nack(m, true, false);
        if (rejected === EVENTS) resolve();
      }).catch(reject);
    });
    await rejecter.close();
    await waitFor('messages in dlq', () => depth('dlq'), EVENTS, 120_000);
  };

  // Lazarus: the bridge, as workers/jobs.ts starts it.
  const config = loadConfig({ DATABASE_URL: lazarusDb.url });
  const handle = createDb(lazarusDb.url, { ...config.db, applicationName: 'lazarus-api' });
  // Where a batch's time goes: the bridge's INSERT (its named statement on the handle's pool), timed
  // from the outside so the bridge runs unchanged; the rest of the run is everything else.
  let bridgeInsertMs = 0;
  const poolQuery = handle.pool.query.bind(handle.pool) as (...args: unknown[]) => Promise<unknown>;
  (handle.pool as { query: unknown }).query = (...args: unknown[]) => {
    const isInsert = (args[0] as { name?: string } | null)?.name === 'lazarus_insert_dead_letters';
    const started = performance.now();
    const result = poolQuery(...args);
    return isInsert ? result.finally(() => { bridgeInsertMs += performance.now() - started; }) : result;
  };
  cleanups.push(() => handle.close());
  const bridges = resolveBridges([{ name: 'bench', kind: 'rabbitmq', settings: { url: vhost.url, queue: 'dlq', prefetch: PREFETCH } }], BRIDGE_KINDS);
  const board = createBridgeBoard(bridges);
  const outage = createOutageLog(logger);
  const viaBridge = async () => {
    const started = performance.now();
    bridgeInsertMs = 0;
    const running = startBridge({ bridge: bridges[0]!, board, db: handle.db, logger, outage, rules: config.writes, shutdownTimeoutMs: config.shutdownTimeoutMs });
    let recorded = 0;
    let batches = 0;
    try {
      await new Promise<void>((resolve, reject) => {
        running.events.on('passFailed', reject);
        running.events.on('passCompleted', (s: BridgePassSummary) => {
          if (s.duplicates + s.refused > 0) reject(new Error(`a pass had ${s.duplicates} duplicates and ${s.refused} refusals`));
          recorded += s.recorded;
          if (s.claimed > 0) batches += 1;
          if (recorded >= EVENTS) resolve();
        });
      });
    } finally {
      await running.stop();
    }
    const perBatch = (ms: number) => (ms / Math.max(batches, 1)).toFixed(2);
    console.log(`  bridge: ${batches} batches, ${(recorded / Math.max(batches, 1)).toFixed(1)} messages a batch; per batch ${perBatch(bridgeInsertMs)} ms in the INSERT, ${perBatch(performance.now() - started - bridgeInsertMs)} ms the rest`);
    return recorded;
  };

  // Raw: consume, one multi-row INSERT of what has arrived, commit, one ack for the batch.
  const rawPool = new pg.Pool({ connectionString: rawDb.url, max: 1, application_name: 'bench-raw' });
  rawPool.on('error', () => {});
  cleanups.push(() => rawPool.end());
  const raw = await amqp.connect(vhost.url);
  cleanups.push(() => raw.close());
  const viaRawLoop = async () => {
    const ch = await raw.createChannel();
    await ch.prefetch(PREFETCH);
    const arrived: amqp.ConsumeMessage[] = [];
    let wake: () => void = () => {};
    const { consumerTag } = await ch.consume('dlq', (m) => {
      if (m) arrived.push(m);
      wake();
    });
    let stored = 0;
    let batches = 0;
    let insertMs = 0;
    const started = performance.now();
    while (stored < EVENTS) {
      if (arrived.length === 0) await new Promise<void>((resolve) => { wake = resolve; });
      const batch = arrived.splice(0, PREFETCH);
      if (batch.length === 0) continue;
      batches += 1;
      const values: unknown[] = [];
      const tuples = batch.map((m) => {
        const { headers, ...properties } = m.properties;
        const death = (headers?.['x-death'] as Array<{ queue: string; reason: string; 'routing-keys': string[] }> | undefined)?.[0];
        const b = values.length;
        values.push(
          death?.['routing-keys'][0] ?? m.fields.routingKey, death?.queue ?? 'dlq', properties.appId ?? 'rabbitmq',
          `amqp:${vhost.name}/dlq:${createHash('sha256').update(m.content).digest('hex').slice(0, 32)}`,
          m.content.toString('utf8'), JSON.stringify({ properties, headers }), `${death?.reason ?? 'dead-lettered'} in queue ${death?.queue ?? '?'}`,
        );
        return `($${b + 1},$${b + 2},$${b + 3},$${b + 4},$${b + 5}::jsonb,$${b + 6}::jsonb,'UNKNOWN',$${b + 7})`;
      });
      const insertStarted = performance.now();
      const r = await rawPool.query(`insert into dead_letters (event_type, queue, source, dedupe_key, payload, headers, error_kind, error_message)
                                        values ${tuples.join(',')} on conflict (dedupe_key) do nothing`, values);
      insertMs += performance.now() - insertStarted;
      ch.ack(batch.at(-1)!, true);
      stored += r.rowCount ?? 0;
    }
    await ch.cancel(consumerTag);
    await ch.close();
    const perBatch = (ms: number) => (ms / Math.max(batches, 1)).toFixed(2);
    console.log(`  raw: ${batches} batches, ${(stored / Math.max(batches, 1)).toFixed(1)} messages a batch; per batch ${perBatch(insertMs)} ms in the INSERT, ${perBatch(performance.now() - started - insertMs)} ms the rest`);
    return stored;
  };

  console.log(`lazarus: startBridge (rabbitmq kind, prefetch ${PREFETCH}), one statement per batch with its history rows, the batch acked after commit`);
  console.log(`raw: amqplib consume, prefetch ${PREFETCH}, multi-row INSERT … ON CONFLICT DO NOTHING of what arrived, one ack (multiple) after commit`);
  console.log(`both: durable dlq in vhost ${vhost.name}, ${EVENTS} persistent ~1 KB JSON messages rejected into it before each run\n`);

  const verify = (db: typeof lazarusDb) => async (moved: number) => {
    await waitFor('messages left in dlq', () => depth('dlq'), 0);
    const rows = await db.rows();
    if (rows !== moved) throw new Error(`${rows} rows stored, ${moved} counted`);
  };
  await runInterleaved({
    title: 'Ingest from a RabbitMQ dead-letter queue', events: EVENTS, runs: RUNS, bar: 0.8, brokerCpuMs: () => processCpuMs('beam.smp'),
    lazarus: {
      label: 'lazarus (RabbitMQ bridge)',
      prepare: async () => {
        await lazarusDb.empty();
        await fillDeadLetterQueue();
      },
      run: viaBridge,
      verify: verify(lazarusDb),
      databaseCpuMs: () => lazarusDb.databaseCpuMs('lazarus-api'),
    },
    raw: {
      label: 'raw consume + multi-row INSERT',
      prepare: async () => {
        await rawDb.empty();
        await fillDeadLetterQueue();
      },
      run: viaRawLoop,
      verify: verify(rawDb),
      databaseCpuMs: () => rawDb.databaseCpuMs('bench-raw'),
    },
  });
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cleanUp(cleanups);
}
