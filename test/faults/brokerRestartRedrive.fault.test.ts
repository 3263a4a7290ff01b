// Fault: the broker a redrive publishes to restarts in the middle of it. First the machine's RabbitMQ
// (`rabbitmqctl stop_app && start_app`: every connection cut, durable queues and persistent messages
// kept), then a JetStream server of the test's own (kill -9 and start again on the same port and
// storage directory). Every event must end SUCCEEDED and be at the destination (0 lost). A message
// confirmed by the broker whose confirm was lost with the connection is published again: it is a
// duplicate, and it must carry the same message id as its first copy (AMQP message-id, Nats-Msg-Id),
// so that a de-duplicating receiver drops it; JetStream's duplicate window drops it by itself.
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureRabbitRunning, restartRabbitApp } from '../helpers/brokerFaults.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { countByStatus, scaled, waitFor } from '../helpers/faults.ts';
import { startNatsServer, type NatsServer } from '../helpers/natsServer.ts';
import { useRabbitVhost } from '../helpers/rabbitVhost.ts';
import { setPolicy } from '../helpers/retry.ts';
import { startService, type ServiceProcess } from '../helpers/serviceProcess.ts';

const EVENTS = scaled(20_000, 2_000);
// The events fall due evenly over SPREAD_MS (each is PENDING, its next_attempt_at a little later
// than the one before), so the redrive lasts that long however fast the machine is, and a fault
// started once a tenth is SUCCEEDED lands in its middle: `stop_app` takes seconds to close the port.
const SPREAD_MS = scaled(40_000, 20_000);
const FIRST = EVENTS / 10;

const t = useTestDatabase();
const vhost = useRabbitVhost();
const services: ServiceProcess[] = [];
let nats: NatsServer | undefined;
// Runs before the vhost's own afterAll (hooks run in reverse): the broker is up again to delete it.
afterAll(async () => {
  await Promise.all(services.map((s) => s.stop('SIGKILL')));
  await nats?.stop();
  await ensureRabbitRunning();
}, 180_000);

const retryEnv = () => ({
  DATABASE_URL: t.url, RETRY_POLL_INTERVAL_MS: '100', RETRY_BATCH_SIZE: '200', RETRY_CONCURRENCY: '50', RETRY_LEASE_SECONDS: '30',
});

async function redrive(eventType: string, targetKind: string, targetSettings: Record<string, string>): Promise<{ service: ServiceProcess; lastDueAt: number }> {
  // Retried quickly while the broker is away: exponential backoff from 200 ms, capped at 2 s.
  await setPolicy(t.db, eventType, {
    targetKind, targetSettings, allowPrivateTarget: true, maxAttempts: 1000, baseDelayMs: 200, maxDelayMs: 2000, timeoutMs: 5000,
  });
  const service = await startService(retryEnv());
  services.push(service);
  const lastDueAt = Date.now() + SPREAD_MS; // the insert's now() is a moment later
  await t.db.$executeRaw`
    insert into dead_letters (event_type, payload, next_attempt_at)
    select ${eventType}, jsonb_build_object('n', g), now() + (g * ${SPREAD_MS / EVENTS}::float8) * interval '1 millisecond'
      from generate_series(1, ${EVENTS}::int) g`;
  return { service, lastDueAt };
}

const succeeded = async (eventType: string) =>
  (await t.db.$queryRaw<{ n: number }[]>`select count(*)::int as n from dead_letters_current where event_type = ${eventType} and status = 'SUCCEEDED'`)[0]!.n;

/** Event id by payload n, for one event type. */
async function idsByN(eventType: string): Promise<Map<number, string>> {
  const rows = await t.db.$queryRaw<{ n: number; id: string }[]>`select (payload->>'n')::int as n, id::text from dead_letters_current where event_type = ${eventType}`;
  return new Map(rows.map((r) => [r.n, r.id]));
}

async function attemptSummary(eventType: string) {
  return t.db.$queryRaw<{ outcome: string; kind: string | null; n: number }[]>`
    select a.outcome::text, a.failure_kind::text as kind, count(*)::int as n
      from delivery_attempts a join dead_letters_current d on d.id = a.dead_letter_id
     where d.event_type = ${eventType} group by 1, 2 order by 1, 2`;
}

interface Received {
  n: number;
  messageId: string;
  lazarusId: string;
}

/**
 * 0 lost: every event's id arrived. Every copy of one event carries the event's own id as its
 * message id (and as the Lazarus id header), so a duplicate has the same id as its first copy.
 */
function account(received: readonly Received[], ids: Map<number, string>) {
  const copies = new Map<number, Received[]>();
  for (const r of received) copies.set(r.n, [...(copies.get(r.n) ?? []), r]);
  const lost = [...ids.keys()].filter((n) => !copies.has(n)).length;
  const duplicates = received.length - copies.size;
  const wrongIds = received.filter((r) => r.messageId !== ids.get(r.n) || r.lazarusId !== ids.get(r.n)).length;
  return { lost, duplicates, wrongIds, strangers: [...copies.keys()].filter((n) => !ids.has(n)).length };
}

describe('the broker restarts in the middle of a redrive', () => {
  it('RabbitMQ (stop_app, start_app): every event SUCCEEDED and in the queue; duplicates carry their first copy’s message-id', async () => {
    const queue = 'redriven';
    const setup = await amqp.connect(vhost.url);
    await (await setup.createChannel()).assertQueue(queue, { durable: true });
    await setup.close();
    const type = 'order.amqp';
    const { service, lastDueAt } = await redrive(type, 'amqp', { url: vhost.url, exchange: '', routingKey: queue });
    const started = Date.now();
    await waitFor(async () => (await succeeded(type)) >= FIRST, 240_000, 'the redrive under way');
    const before = await succeeded(type);
    let atDown = -1;
    const { downAfterMs, restartMs } = await restartRabbitApp(async () => {
      atDown = await succeeded(type);
    });
    const backAt = Date.now();
    const atBack = await succeeded(type);
    const firstMs = await waitFor(async () => (await succeeded(type)) > atBack, 120_000, 'delivering again');
    await waitFor(async () => (await succeeded(type)) === EVENTS, 300_000, 'every event SUCCEEDED');
    const doneAt = Date.now();

    expect(atDown).toBeGreaterThanOrEqual(FIRST);
    const received = await drainQueue(vhost.url, queue);
    const result = account(received, await idsByN(type));
    const attempts = await attemptSummary(type);
    console.log(`RabbitMQ restart mid-redrive (${EVENTS} events to a durable queue, confirms): stop_app at ${before} SUCCEEDED, `
      + `port closed ${downAfterMs} ms later at ${atDown} SUCCEEDED, stop_app+start_app ${restartMs} ms, delivering again ${firstMs} ms after it was back, `
      + `all SUCCEEDED ${doneAt - lastDueAt} ms after the last event fell due (${doneAt - started} ms in all); in the queue ${received.length}: lost ${result.lost}, duplicates ${result.duplicates} `
      + `(each with its first copy's message-id: ${result.wrongIds === 0}); attempts ${JSON.stringify(attempts)}`);
    expect(atDown).toBeLessThan(EVENTS); // the broker went away in the middle, not after the end
    expect(await countByStatus(t.db)).toEqual({ SUCCEEDED: EVENTS });
    expect(result).toMatchObject({ lost: 0, wrongIds: 0, strangers: 0 });
    expect(received.length).toBe(EVENTS + result.duplicates);
    expect(await service.stop()).toBe(0);
  }, 900_000);

  it('NATS JetStream (kill -9, start again): every event SUCCEEDED and in the stream once; the duplicate window dropped the re-publishes', async () => {
    nats = await startNatsServer();
    const admin = await natsConnect({ servers: [nats.url] });
    await (await jetstreamManager(admin)).streams.add({ name: 'REDRIVEN', subjects: ['redriven.>'] });
    await admin.close();
    const type = 'order.nats';
    const { service, lastDueAt } = await redrive(type, 'nats', { url: nats.url, subject: 'redriven.orders', expectedStream: 'REDRIVEN' });
    const started = Date.now();
    await waitFor(async () => (await succeeded(type)) >= FIRST, 240_000, 'the redrive under way');
    const killedAt = Date.now();
    await nats.kill();
    const before = await succeeded(type);
    await nats.start();
    const backAt = Date.now();
    const atBack = await succeeded(type);
    const firstMs = await waitFor(async () => (await succeeded(type)) > atBack, 120_000, 'delivering again');
    await waitFor(async () => (await succeeded(type)) === EVENTS, 300_000, 'every event SUCCEEDED');
    const doneAt = Date.now();

    const received = await readStream(nats.url, 'REDRIVEN');
    const result = account(received, await idsByN(type));
    const attempts = await attemptSummary(type);
    const [dropped] = await t.db.$queryRaw<{ n: number }[]>`
      select count(*)::int as n from delivery_attempts where outcome = 'SUCCEEDED' and response_body like '%a duplicate JetStream dropped'`;
    console.log(`NATS restart mid-redrive (${EVENTS} events, JetStream publish with ack): killed at ${before} SUCCEEDED (${killedAt - started} ms after the events were inserted), `
      + `server ready again ${backAt - killedAt} ms after the kill, delivering again ${firstMs} ms after that, all SUCCEEDED ${doneAt - lastDueAt} ms after the last event fell due; in the stream ${received.length}: `
      + `lost ${result.lost}, duplicates in the stream ${result.duplicates}, re-publishes the duplicate window dropped ${dropped!.n}; attempts ${JSON.stringify(attempts)}`);
    expect(before).toBeLessThan(EVENTS); // killed in the middle, not after the end
    expect(await countByStatus(t.db)).toEqual({ SUCCEEDED: EVENTS });
    expect(result).toEqual({ lost: 0, duplicates: 0, wrongIds: 0, strangers: 0 });
    expect(attempts.some((a) => a.outcome !== 'SUCCEEDED')).toBe(true); // the kill did cut deliveries
    expect(await service.stop()).toBe(0);
  }, 900_000);
});

/** Every message in `queue` (consumed and acked), with its message-id and x-lazarus-id. */
async function drainQueue(url: string, queue: string): Promise<Received[]> {
  const connection = await amqp.connect(url);
  try {
    const channel = await connection.createChannel();
    const { messageCount } = await channel.checkQueue(queue);
    const received: Received[] = [];
    await channel.prefetch(1000);
    await new Promise<void>((resolve, reject) => {
      if (messageCount === 0) return resolve();
      channel.consume(queue, (m) => {
        if (!m) return reject(new Error('consumer cancelled'));
        received.push({ n: JSON.parse(m.content.toString()).n, messageId: String(m.properties.messageId), lazarusId: String(m.properties.headers?.['x-lazarus-id']) });
        channel.ack(m);
        if (received.length === messageCount) resolve();
      }).catch(reject);
    });
    return received;
  } finally {
    await connection.close();
  }
}

/** Every message in `stream`, through an ordered consumer, with its Nats-Msg-Id and Lazarus-Id. */
async function readStream(url: string, stream: string): Promise<Received[]> {
  const nc = await natsConnect({ servers: [url] });
  try {
    const { state } = await (await jetstreamManager(nc)).streams.info(stream);
    const received: Received[] = [];
    if (state.messages === 0) return received;
    const consumer = await jetstream(nc).consumers.get(stream);
    const messages = await consumer.consume();
    for await (const m of messages) {
      received.push({ n: (m.json() as { n: number }).n, messageId: String(m.headers?.get('Nats-Msg-Id')), lazarusId: String(m.headers?.get('Lazarus-Id')) });
      if (received.length === state.messages) break;
    }
    await messages.close();
    return received;
  } finally {
    await nc.close();
  }
}
