// The RabbitMQ bridge against the real local broker: a work queue with a dead-letter exchange, messages
// rejected into it, and the bridge storing them as dead letters.
import { randomBytes } from 'node:crypto';
import { once, type EventEmitter } from 'node:events';
import amqp from 'amqplib';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createOutageLog } from '../src/db/outageLog.ts';
import { createBridgeBoard, resolveBridges, type BridgeBoard } from '../src/workers/bridges/bridgeBoard.ts';
import type { BridgeMessage, BridgeSource } from '../src/workers/bridges/bridgeKind.ts';
import { createRabbitmqBridge, type RabbitmqSettings } from '../src/workers/bridges/rabbitmq.ts';
import { BRIDGE_KINDS } from '../src/workers/bridges/registry.ts';
import { startBridge, type BridgePassSummary, type RunningBridge } from '../src/workers/bridges/runBridge.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { closeVhostConnections, declareDeadLetterSetup, RABBITMQ_HOST, rejectMessages, useRabbitVhost } from './helpers/rabbitVhost.ts';
import { silentLogger } from './helpers/retry.ts';

const t = useTestDatabase();
const vhost = useRabbitVhost();
let admin: amqp.ChannelModel;
beforeAll(async () => {
  admin = await amqp.connect(vhost.url);
});
// Hooks after all run in reverse: this one before the vhost is deleted.
afterAll(() => admin.close());

const running: RunningBridge[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

let n = 0;
/** A fresh work queue → DLX → DLQ, and a bridge over the DLQ (not started). */
async function setup(settings: Record<string, unknown> = {}) {
  n += 1;
  const names = { work: `work${n}`, dlx: `dlx${n}`, dlq: `dlq${n}`, exchange: `shop${n}`, parking: `parking${n}` };
  const { connection, channel } = await declareDeadLetterSetup(vhost.url, names);
  const bridges = resolveBridges([{ name: `orders${n}`, kind: 'rabbitmq', settings: { url: vhost.url, queue: names.dlq, ...settings } }], BRIDGE_KINDS);
  const board = createBridgeBoard(bridges);
  const start = () => {
    const r = startBridge({ bridge: bridges[0]!, board, db: t.db, logger: silentLogger, outage: createOutageLog(silentLogger), rules: { allowedEventTypes: [] } });
    running.push(r);
    return r;
  };
  const publish = (body: Buffer | string, options: amqp.Options.Publish = {}, routingKey = 'order.placed') =>
    channel.publish(names.exchange, routingKey, Buffer.isBuffer(body) ? body : Buffer.from(body), options);
  return { names, channel, connection, board, start, publish, bridge: bridges[0]! };
}

/** Resolves with the summed passes once `count` messages were stored or found stored. */
function untilTaken(events: EventEmitter, count: number): Promise<BridgePassSummary[]> {
  const passes: BridgePassSummary[] = [];
  return new Promise((resolve, reject) => {
    const onPass = (s: BridgePassSummary) => {
      if (s.claimed > 0) passes.push(s);
      if (passes.reduce((sum, p) => sum + p.recorded + p.duplicates + p.refused, 0) >= count) {
        events.off('passCompleted', onPass);
        events.off('passFailed', reject);
        resolve(passes);
      }
    };
    events.on('passCompleted', onPass);
    events.on('passFailed', reject);
  });
}

async function queueState(queue: string): Promise<{ messageCount: number; consumerCount: number }> {
  const channel = await admin.createChannel();
  try {
    const { messageCount, consumerCount } = await channel.checkQueue(queue);
    return { messageCount, consumerCount };
  } finally {
    await channel.close();
  }
}
const queueDepth = async (queue: string) => (await queueState(queue)).messageCount;

describe('the RabbitMQ bridge', () => {
  it('stores each rejected message as a dead letter with its x-death context, headers and origin, then acks it', async () => {
    const s = await setup();
    s.publish(JSON.stringify({ orderId: 7 }), { contentType: 'application/json', messageId: 'm-1', headers: { trace: 'abc', attempt: 2 }, appId: 'checkout' });
    await rejectMessages(s.channel, s.names.work, 1);
    const bridge = s.start();
    await untilTaken(bridge.events, 1);
    const rows = await t.db.deadLetter.findMany();
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row).toMatchObject({
      eventType: 'order.placed', payload: { orderId: 7 }, queue: s.names.work, source: 'checkout',
      errorKind: 'UNKNOWN', errorMessage: `rejected in queue ${s.names.work}`,
      origin: { kind: 'amqp', bridge: s.bridge.name, vhost: vhost.name, queue: s.names.work, exchange: s.names.exchange, routingKeys: ['order.placed'] },
    });
    expect(row.dedupeKey).toMatch(new RegExp(`^amqp:${vhost.name}/${s.names.dlq}:[0-9a-f]{32}$`));
    const headers = row.headers as { properties: Record<string, unknown>; headers: Record<string, unknown> };
    expect(headers.properties).toMatchObject({ contentType: 'application/json', messageId: 'm-1', appId: 'checkout' });
    expect(headers.headers).toMatchObject({ trace: 'abc', attempt: 2, 'x-first-death-queue': s.names.work, 'x-first-death-reason': 'rejected' });
    expect(headers.headers['x-death']).toEqual([expect.objectContaining({ count: 1, reason: 'rejected', queue: s.names.work, exchange: s.names.exchange, 'routing-keys': ['order.placed'] })]);
    expect(Math.abs(row.occurredAt.getTime() - Date.now())).toBeLessThan(120_000);
    expect(await queueDepth(s.names.dlq)).toBe(0);
    expect(s.board.get(s.bridge.name)).toMatchObject({ received: 1, recorded: 1, duplicates: 0, refused: 0, connection: 'CONNECTED' });
    await s.connection.close();
  });

  it('keeps a JSON body’s numbers as they came, also those JavaScript cannot carry', async () => {
    const s = await setup();
    s.publish('{"id": 12345678901234567890, "amount": 0.1000000000000000055511151231257827, "n": 7}', { contentType: 'application/json' });
    await rejectMessages(s.channel, s.names.work, 1);
    const bridge = s.start();
    await untilTaken(bridge.events, 1);
    expect(await t.db.$queryRaw`select payload::text as payload from dead_letters`).toEqual([
      { payload: '{"n": 7, "id": 12345678901234567890, "amount": 0.1000000000000000055511151231257827}' },
    ]);
    await s.connection.close();
  });

  it('keeps a non-JSON body byte-exact, and a UTF-8 text body as text', async () => {
    const s = await setup({ eventType: 'legacy.blob' });
    const bytes = randomBytes(300);
    s.publish(bytes, { contentType: 'application/octet-stream' });
    s.publish('plain words\r\n', { contentType: 'text/plain; charset=utf-8' });
    await rejectMessages(s.channel, s.names.work, 2);
    const bridge = s.start();
    await untilTaken(bridge.events, 2);
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => r.eventType)).toEqual(['legacy.blob', 'legacy.blob']);
    const binary = rows.find((r) => (r.payload as { $binary?: string }).$binary)!.payload as { $binary: string; contentType: string };
    expect(binary.contentType).toBe('application/octet-stream');
    expect(Buffer.from(binary.$binary, 'base64').equals(bytes)).toBe(true);
    expect(rows.map((r) => r.payload)).toContainEqual({ $text: 'plain words\r\n', contentType: 'text/plain; charset=utf-8' });
    await s.connection.close();
  });
});

describe('poison messages', () => {
  it('stores a JSON-claimed body that is not UTF-8 as bytes, refuses an oversized one to the queue’s own DLX, and keeps going', async () => {
    const s = await setup();
    const notUtf8 = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    s.publish(notUtf8, { contentType: 'application/json' });
    s.publish(Buffer.alloc(300 * 1024, 0x61), { contentType: 'application/octet-stream' });
    s.publish('{"after": true}', { contentType: 'application/json' });
    await rejectMessages(s.channel, s.names.work, 3);
    const bridge = s.start();
    const passes = await untilTaken(bridge.events, 3);
    expect(passes.reduce((sum, p) => sum + p.poison, 0)).toBe(2);
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => r.payload)).toEqual([{ $binary: notUtf8.toString('base64'), contentType: 'application/json' }, { after: true }]);
    expect(s.board.get(s.bridge.name)).toMatchObject({ received: 3, recorded: 2, refused: 1, poison: { not_utf8: 1, too_large: 1 } });
    expect(s.board.get(s.bridge.name)!.lastError).toMatch(/refused a message: body of 307200 bytes is over the 262144-byte payload cap/);
    // Refused, not lost: the bridge queue's own dead-letter exchange kept it (the nack is not confirmed: wait for it).
    await vi.waitFor(async () => expect(await queueDepth(s.names.parking)).toBe(1), { timeout: 20_000, interval: 50 });
    expect(await queueDepth(s.names.dlq)).toBe(0);
    await s.connection.close();
  });
});

describe('acknowledgement', () => {
  it('acks only after the commit: a message whose ack is lost with the connection is redelivered and stored once', async () => {
    const s = await setup();
    for (let i = 0; i < 3; i++) s.publish(JSON.stringify({ i }), { contentType: 'application/json' });
    await rejectMessages(s.channel, s.names.work, 3);
    await s.connection.close();
    // Hold the table so the bridge's INSERT waits after taking the messages.
    const locker = await t.handle.pool.connect();
    await locker.query('begin; lock table dead_letters in share mode');
    let released = false;
    try {
      const bridge = s.start();
      const brokenUnder = new Promise((resolve) => bridge.events.once('sourceFailed', resolve));
      await vi.waitFor(async () => {
        const { rows } = await t.handle.pool.query(`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%insert into dead_letters%'`);
        expect(rows).toHaveLength(1);
      }, { timeout: 20_000, interval: 20 });
      // The batch the INSERT holds: its messages come back as duplicates; any that arrived after it, once.
      const held = s.board.get(s.bridge.name)!.received;
      expect(held).toBeGreaterThan(0);
      expect(await queueState(s.names.dlq)).toEqual({ messageCount: 0, consumerCount: 1 });
      // The broker side goes away between taking the messages and the commit, as in a crash.
      await closeVhostConnections(vhost.name);
      admin = await amqp.connect(vhost.url);
      await brokenUnder;
      const taken = untilTaken(bridge.events, 3 + held);
      await locker.query('commit');
      released = true;
      const passes = await taken;
      expect(passes.reduce((sum, p) => sum + p.recorded, 0)).toBe(3);
      expect(passes.reduce((sum, p) => sum + p.duplicates, 0)).toBe(held);
    } finally {
      if (!released) await locker.query('rollback');
      locker.release();
    }
    expect(await t.db.deadLetter.count()).toBe(3);
    expect(await queueDepth(s.names.dlq)).toBe(0);
  });
});

describe('settling a batch', () => {
  it('acks exactly the messages acked: a held-back one before or after them goes back to the queue, a refused one to the DLX', async () => {
    const s = await setup();
    for (let i = 0; i < 6; i++) s.publish(JSON.stringify({ i }), { contentType: 'application/json' });
    await rejectMessages(s.channel, s.names.work, 6);
    const kind = createRabbitmqBridge();
    const open = () => kind.open(s.bridge.settings as RabbitmqSettings, { name: s.bridge.name, arrived: () => {}, failed: () => {} });
    const takeAll = async (source: BridgeSource, count: number) => {
      const taken: BridgeMessage[] = [];
      await vi.waitFor(() => {
        taken.push(...source.take(10));
        expect(taken).toHaveLength(count);
      }, { timeout: 20_000, interval: 20 });
      return taken;
    };
    const source = await open();
    const taken = await takeAll(source, 6);
    expect(taken.map((m) => m.record.payload)).toEqual([0, 1, 2, 3, 4, 5].map((i) => ({ i })));
    // The oldest (0) and the newest (5) are held back, as if stored in a batch not yet committed.
    taken[3]!.refuse();
    for (const i of [1, 2, 4]) taken[i]!.ack();
    await vi.waitFor(async () => expect(await queueDepth(s.names.parking)).toBe(1), { timeout: 20_000, interval: 50 });
    await source.close();
    await vi.waitFor(async () => expect(await queueDepth(s.names.dlq)).toBe(2), { timeout: 20_000, interval: 50 });

    // Taken again: acking both settles the queue, and nothing else comes back.
    const again = await open();
    const back = await takeAll(again, 2);
    expect(back.map((m) => m.record.payload)).toEqual([{ i: 0 }, { i: 5 }]);
    for (const m of back) m.ack();
    await again.close();
    expect(await queueState(s.names.dlq)).toEqual({ messageCount: 0, consumerCount: 0 });
    expect(await queueDepth(s.names.parking)).toBe(1);
    await s.connection.close();
  });
});

describe('pause and resume', () => {
  it('stops consuming when paused, stays paused across a restart, and takes the waiting messages on resume; bridges never shows credentials', async () => {
    const s = await setup();
    const server = testServer(t.db, { bridges: s.board });
    const first = s.start();
    await once(first.events, 'passCompleted');
    const pausedPass = new Promise<void>((resolve) => {
      const on = (p: BridgePassSummary) => {
        if (p.paused) {
          first.events.off('passCompleted', on);
          resolve();
        }
      };
      first.events.on('passCompleted', on);
    });
    const paused = await execute(server, `mutation ($name: String!) { pauseBridge(name: $name) { name state paused pausedBy } }`, { name: s.bridge.name });
    expect(paused.body).toEqual({ data: { pauseBridge: { name: s.bridge.name, state: 'PAUSED', paused: true, pausedBy: 'local' } } });
    await pausedPass;
    expect((await queueState(s.names.dlq)).consumerCount).toBe(0);
    s.publish('{"waiting": 1}', { contentType: 'application/json' });
    s.publish('{"waiting": 2}', { contentType: 'application/json' });
    await rejectMessages(s.channel, s.names.work, 2);

    // A restart: a new runner reads the pause from the database before it opens anything.
    await first.stop();
    running.splice(running.indexOf(first), 1);
    const second = s.start();
    const [pass] = await once(second.events, 'passCompleted') as [BridgePassSummary];
    expect(pass).toMatchObject({ paused: true, claimed: 0 });
    expect(await queueState(s.names.dlq)).toEqual({ messageCount: 2, consumerCount: 0 });
    expect(await t.db.deadLetter.count()).toBe(0);

    const taken = untilTaken(second.events, 2);
    const resumed = await execute(server, `mutation ($name: String!) { resumeBridge(name: $name) { state paused } }`, { name: s.bridge.name });
    // The runner may have connected already by the time the answer is read: the poke wakes it at once.
    expect(resumed.body).toEqual({ data: { resumeBridge: { state: expect.stringMatching(/^CONNECT(ING|ED)$/), paused: false } } });
    await taken;
    expect(await t.db.deadLetter.count()).toBe(2);

    // The lag is read beside the batches (every 2 s, runBridge.ts): it is known a moment after the resume.
    let shown = '';
    await vi.waitFor(async () => {
      const { body } = await execute<{ bridges: Record<string, unknown>[] }>(server, `{ bridges { name kind description state paused received recorded duplicates poison refused lag ratePerSecond lastError lastErrorAt } }`);
      expect(body.data?.bridges).toEqual([{
        name: s.bridge.name, kind: 'rabbitmq', description: `rabbitmq queue ${s.names.dlq} on ${RABBITMQ_HOST} vhost ${vhost.name}`,
        state: 'CONNECTED', paused: false, received: 2, recorded: 2, duplicates: 0, poison: 0, refused: 0,
        lag: expect.any(Number), ratePerSecond: expect.any(Number), lastError: null, lastErrorAt: null,
      }]);
      shown = JSON.stringify(body);
    }, { timeout: 10_000, interval: 50 });
    expect(shown).not.toContain('guest');
    const unknown = await execute(server, `mutation { pauseBridge(name: "nope") { name } }`);
    expect(unknown.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', reason: 'UNKNOWN_BRIDGE' });
    await s.connection.close();
  });
});
