// The NATS JetStream bridge against a real JetStream server of this file's own: consumers that give up
// on messages (max_deliver) or terminate them, the advisories captured by a stream and resolved to the
// original message; a plain dead-letter stream; ack after commit; poison; pause and resume.
import { once, type EventEmitter } from 'node:events';
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { createOutageLog } from '../src/db/outageLog.ts';
import { createNatsConnections, type NatsConnections } from '../src/workers/brokers/natsConnections.ts';
import { BridgeDeclarationError, createBridgeBoard, resolveBridges, type Bridge } from '../src/workers/bridges/bridgeBoard.ts';
import type { BridgeKinds } from '../src/workers/bridges/bridgeKind.ts';
import { createNatsBridge, defaultDurable } from '../src/workers/bridges/nats.ts';
import { BRIDGE_KINDS } from '../src/workers/bridges/registry.ts';
import { startBridge, type BridgePassSummary, type RunningBridge } from '../src/workers/bridges/runBridge.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { startNatsServer, type NatsServer } from './helpers/natsServer.ts';
import { silentLogger } from './helpers/retry.ts';

const t = useTestDatabase();
let server: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: [server.url] });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const running: RunningBridge[] = [];
const pools: NatsConnections[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
  for (const p of pools.splice(0)) await p.close();
});

let n = 0;
interface Setup {
  stream: string;
  subject: string;
  bridge: Bridge;
  board: ReturnType<typeof createBridgeBoard>;
  start(): RunningBridge;
}

/** A fresh stream `ORDERS<n>` (subjects orders<n>.>) with a consumer `work` that gives up after 2 deliveries, and a bridge (not started). */
async function setup(settings: (stream: string) => Record<string, unknown>, options: { kinds?: BridgeKinds; url?: string } = {}): Promise<Setup> {
  n += 1;
  const stream = `ORDERS${n}`;
  await jsm.streams.add({ name: stream, subjects: [`orders${n}.>`], retention: RetentionPolicy.Limits });
  await jsm.consumers.add(stream, { durable_name: 'work', ack_policy: AckPolicy.Explicit, max_deliver: 2 });
  const bridges = resolveBridges([{ name: `orders${n}`, kind: 'nats', settings: { url: options.url ?? server.url, ...settings(stream) } }], options.kinds ?? BRIDGE_KINDS);
  const board = createBridgeBoard(bridges);
  return {
    stream, subject: `orders${n}.placed`, bridge: bridges[0]!, board,
    start: () => {
      const r = startBridge({ bridge: bridges[0]!, board, db: t.db, logger: silentLogger, outage: createOutageLog(silentLogger), rules: { allowedEventTypes: [] } });
      running.push(r);
      return r;
    },
  };
}
const watching = (consumer = 'work') => (stream: string) => ({ consumers: [{ stream, consumer }] });

/**
 * Fails messages of the consumer until JetStream has published `count` advisories for it: naks each
 * delivery until max_deliver (2), or terminates each. The server notices max_deliver at the next pull,
 * so the loop pulls until the advisories arrived.
 */
async function failMessages(stream: string, count: number, settle: 'nak' | 'term', consumer = 'work') {
  const kind = settle === 'term' ? 'MSG_TERMINATED' : 'MAX_DELIVERIES';
  const sub = nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.${kind}.${stream}.${consumer}`, { max: count });
  await nc.flush();
  let advisories = 0;
  const seen = (async () => {
    for await (const _ of sub) advisories += 1;
  })();
  const c = await js.consumers.get(stream, consumer);
  while (advisories < count) {
    const m = await c.next({ expires: 1_000 });
    if (settle === 'term') m?.term();
    else m?.nak();
  }
  await seen;
}

/** Starts the bridge and waits for its first pass: the advisory stream and its durable exist from then on. */
async function started(s: Setup): Promise<RunningBridge> {
  const bridge = s.start();
  await once(bridge.events, 'passCompleted');
  return bridge;
}

/** Resolves with the passes once `count` messages were stored, found stored, or refused. */
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
const sum = (passes: BridgePassSummary[], key: 'recorded' | 'duplicates' | 'poison' | 'refused') => passes.reduce((total, p) => total + p[key], 0);

function untilPaused(events: EventEmitter): Promise<void> {
  return new Promise((resolve) => {
    const on = (p: BridgePassSummary) => {
      if (!p.paused) return;
      events.off('passCompleted', on);
      resolve();
    };
    events.on('passCompleted', on);
  });
}

/**
 * Until the server has every message of the consumer acked (or terminated). The bridge acks after its
 * commit, on its own connection, so the server may count the acks a moment after the rows are there.
 */
async function acked(stream: string, durable: string): Promise<void> {
  await vi.waitFor(async () => {
    expect(await jsm.consumers.info(stream, durable)).toMatchObject({ num_pending: 0, num_ack_pending: 0 });
  }, { timeout: 10_000, interval: 20 });
}

describe('advisories', () => {
  it('stores each message a consumer gave up on (MAX_DELIVERIES) as its original, with headers, failure context and origin; skips consumers it does not watch', async () => {
    const s = await setup(watching());
    await jsm.consumers.add(s.stream, { durable_name: 'other', ack_policy: AckPolicy.Explicit, max_deliver: 2 });
    const h = natsHeaders();
    h.set('trace', 'abc');
    h.append('trace', 'def');
    h.set('Content-Type', 'application/json');
    const first = await js.publish(s.subject, JSON.stringify({ orderId: 7 }), { headers: h });
    const blob = Buffer.from([0, 1, 2, 0xff, 0xfe]);
    const second = await js.publish(`orders${n}.blob`, blob);
    // The consumer nobody watches fails first: its advisory comes before the watched ones.
    const bridge = await started(s);
    const taken = untilTaken(bridge.events, 2);
    await failMessages(s.stream, 1, 'nak', 'other');
    await failMessages(s.stream, 2, 'nak');
    await taken;
    const found = await t.db.deadLetter.findMany();
    expect(found).toHaveLength(2);
    const rows = [first.seq, second.seq].map((seq) => found.find((r) => (r.origin as { sequence: number }).sequence === seq)!);
    expect(rows[0]).toMatchObject({
      eventType: s.subject, payload: { orderId: 7 }, queue: `${s.stream}/work`, source: 'nats', errorKind: 'UNKNOWN',
      errorMessage: `MAX_DELIVERIES: consumer ${s.stream}/work gave up on stream sequence ${first.seq} after 2 deliveries`,
      origin: { kind: 'nats', bridge: s.bridge.name, stream: s.stream, subject: s.subject, sequence: first.seq },
    });
    const headers = rows[0]!.headers as { headers: Record<string, unknown>; advisory: Record<string, unknown> };
    expect(headers.headers).toEqual({ trace: ['abc', 'def'], 'Content-Type': 'application/json' });
    expect(headers.advisory).toMatchObject({ type: 'io.nats.jetstream.advisory.v1.max_deliver', stream: s.stream, consumer: 'work', stream_seq: first.seq, deliveries: 2 });
    expect(rows[0]!.dedupeKey).toBe(`nats:${s.stream}:${first.seq}:${headers.advisory.id}`);
    expect(Math.abs(rows[0]!.occurredAt.getTime() - Date.now())).toBeLessThan(120_000);
    expect(rows[1]).toMatchObject({ eventType: `orders${n}.blob`, payload: { $binary: blob.toString('base64'), contentType: null }, origin: { sequence: second.seq } });
    expect(s.board.get(s.bridge.name)).toMatchObject({ received: 2, recorded: 2, duplicates: 0, refused: 0, connection: 'CONNECTED' });
    await acked('LAZARUS_ADVISORIES', defaultDurable(s.bridge.name));
  });

  it('stores a terminated message with the advisory as context, and the advisory alone when the original is no longer in its stream', async () => {
    const kept = await setup(watching());
    const gone = await setup(watching());
    const keptBridge = await started(kept);
    const goneBridge = await started(gone);
    await keptBridge.stop();
    await goneBridge.stop();
    running.splice(0);
    await js.publish(kept.subject, '{"kept": true}');
    await failMessages(kept.stream, 1, 'term');
    const published = await js.publish(gone.subject, '{"gone": true}');
    await failMessages(gone.stream, 1, 'term');
    // As limits (max_msgs, max_age) or retention would have it.
    await jsm.streams.deleteMessage(gone.stream, published.seq);

    await untilTaken(kept.start().events, 1);
    await untilTaken(gone.start().events, 1);
    const [keptRow, goneRow] = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(keptRow).toMatchObject({
      payload: { kept: true }, queue: `${kept.stream}/work`,
      errorMessage: `MSG_TERMINATED: consumer ${kept.stream}/work terminated stream sequence 1 after 1 delivery`,
    });
    expect(goneRow).toMatchObject({
      eventType: 'nats.message', payload: null, queue: `${gone.stream}/work`,
      errorMessage: `MSG_TERMINATED: consumer ${gone.stream}/work terminated stream sequence ${published.seq} after 1 delivery; the original message is no longer in stream ${gone.stream} (removed by its retention, limits or a delete): only the advisory is recorded`,
      origin: { kind: 'nats', bridge: gone.bridge.name, stream: gone.stream, subject: null, sequence: published.seq },
    });
    expect((goneRow!.headers as { advisory: { type: string } }).advisory.type).toBe('io.nats.jetstream.advisory.v1.terminated');
  });

  it('puts a terminated message’s reason (nats-server 2.11 and later) into the error message', async () => {
    const s = await setup(watching());
    const published = await js.publish(s.subject, '{"why": "reason"}');
    const bridge = await started(s);
    const taken = untilTaken(bridge.events, 1);
    // This server (2.9) takes `+TERM reason` for no ack, so the advisory a 2.11 server publishes for
    // m.term('customer 9 is closed') is published here as that server would.
    await js.publish(`$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.${s.stream}.work`, JSON.stringify({
      type: 'io.nats.jetstream.advisory.v1.terminated', id: `adv${n}`, timestamp: new Date().toISOString(),
      stream: s.stream, consumer: 'work', consumer_seq: 1, stream_seq: published.seq, deliveries: 3, reason: 'customer 9 is closed',
    }));
    await taken;
    const row = await t.db.deadLetter.findFirstOrThrow();
    expect(row).toMatchObject({
      payload: { why: 'reason' },
      errorMessage: `MSG_TERMINATED: consumer ${s.stream}/work terminated stream sequence ${published.seq} after 3 deliveries: customer 9 is closed`,
      dedupeKey: `nats:${s.stream}:${published.seq}:adv${n}`,
    });
  });

  it('records an advisory that arrived while the bridge was stopped, once it starts again', async () => {
    const s = await setup(watching());
    const first = await started(s);
    await first.stop();
    running.splice(running.indexOf(first), 1);
    await js.publish(s.subject, '{"while": "stopped"}');
    await failMessages(s.stream, 1, 'nak');
    await untilTaken(s.start().events, 1);
    expect(await t.db.deadLetter.findFirstOrThrow()).toMatchObject({ payload: { while: 'stopped' }, origin: { stream: s.stream, sequence: 1 } });
  });

  it('keeps an original over the payload cap out of the row and says where it stays, rather than refusing the advisory', async () => {
    const s = await setup(watching());
    await js.publish(s.subject, Buffer.alloc(300 * 1024, 0x61));
    await js.publish(s.subject, '{"after": true}');
    const taken = untilTaken((await started(s)).events, 2);
    await failMessages(s.stream, 2, 'nak');
    const passes = await taken;
    expect(sum(passes, 'refused')).toBe(0);
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => r.payload)).toEqual([null, { after: true }]);
    expect(rows[0]!.errorMessage).toBe(`MAX_DELIVERIES: consumer ${s.stream}/work gave up on stream sequence 1 after 2 deliveries; its body of 307200 bytes is over the 262144-byte payload cap: it stays in stream ${s.stream} at sequence 1 until its limits remove it`);
    expect(s.board.get(s.bridge.name)!.poison).toEqual({ too_large: 1 });
  });
});

describe('a dead-letter stream', () => {
  it('stores each message published to it, with its headers and origin, and acks it', async () => {
    const s = await setup((stream) => ({ stream, filterSubject: `orders${n}.dlq.>` }));
    const h = natsHeaders();
    h.set('Lazarus-Error', 'card declined');
    h.set('tenant', 'acme');
    const published = await js.publish(`orders${n}.dlq.payments`, '{"amount": 12}', { headers: h });
    await js.publish(`orders${n}.other`, '{"not": "a dead letter"}');
    await js.publish(`orders${n}.dlq.text`, 'plain words', { headers: (() => { const t = natsHeaders(); t.set('Content-Type', 'text/plain'); return t; })() });
    const bridge = s.start();
    await untilTaken(bridge.events, 2);
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      eventType: `orders${n}.dlq.payments`, payload: { amount: 12 }, errorMessage: 'card declined', queue: s.stream, source: 'nats',
      headers: { headers: { 'Lazarus-Error': 'card declined', tenant: 'acme' } },
      origin: { kind: 'nats', bridge: s.bridge.name, stream: s.stream, subject: `orders${n}.dlq.payments`, sequence: published.seq },
    });
    expect(rows[0]!.dedupeKey).toMatch(new RegExp(`^nats:${s.stream}:${published.seq}:\\d+$`));
    expect(rows[1]).toMatchObject({ payload: { $text: 'plain words', contentType: 'text/plain' }, errorMessage: `published to dead-letter subject orders${n}.dlq.text (stream ${s.stream})` });
    await acked(s.stream, defaultDurable(s.bridge.name));
  });

  it('stores poison as what it is, refuses what cannot be stored (terminated, left in the stream), and keeps going', async () => {
    const s = await setup((stream) => ({ stream }));
    const json = natsHeaders();
    json.set('Content-Type', 'application/json');
    const notUtf8 = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    await js.publish(`orders${n}.a`, notUtf8, { headers: json });
    await js.publish(`orders${n}.b`, Buffer.alloc(300 * 1024, 0x61));
    const huge = natsHeaders();
    // Under the server's 64 KiB header cap, over the table's once JSON escapes every backslash.
    huge.set('big', '\\'.repeat(40 * 1024));
    await js.publish(`orders${n}.c`, '{}', { headers: huge });
    await js.publish(`orders${n}.d`, '{"after": true}');
    const passes = await untilTaken(s.start().events, 4);
    expect(sum(passes, 'refused')).toBe(2);
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => r.payload)).toEqual([{ $binary: notUtf8.toString('base64'), contentType: 'application/json' }, { after: true }]);
    expect(s.board.get(s.bridge.name)).toMatchObject({ received: 4, recorded: 2, refused: 2, poison: { not_utf8: 1, too_large: 1, bad_headers: 1 } });
    // Refused, not lost: terminated, so never redelivered, and still in the stream.
    await acked(s.stream, defaultDurable(s.bridge.name));
    expect((await jsm.streams.info(s.stream)).state.messages).toBe(4);
  });
});

describe('acknowledgement', () => {
  it('acks only after the commit: messages whose acks are lost with the connection come back after ackWait and are stored once', async () => {
    const connections = createNatsConnections({ reconnectBaseMs: 20, reconnectMaxMs: 200 });
    pools.push(connections);
    const kinds: BridgeKinds = new Map([['nats', createNatsBridge({ connections })]]);
    const s = await setup((stream) => ({ stream, ackWaitMs: 1_000 }), { kinds });
    for (let i = 0; i < 3; i++) await js.publish(`orders${n}.dlq`, JSON.stringify({ i }));
    // Hold the table so the bridge's INSERT waits after taking the messages. Released however the
    // test ends: a held lock would also hang the file's database teardown.
    const locker = await t.handle.pool.connect();
    await locker.query('begin; lock table dead_letters in share mode');
    let released = false;
    onTestFinished(async () => {
      if (!released) await locker.query('rollback').catch(() => {});
      locker.release();
    });
    const bridge = s.start();
    const brokenUnder = new Promise((resolve) => bridge.events.once('sourceFailed', resolve));
    await vi.waitFor(async () => {
      const { rows } = await t.handle.pool.query(`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%insert into dead_letters%'`);
      expect(rows).toHaveLength(1);
    }, { timeout: 20_000, interval: 20 });
    // The batch the INSERT holds: its messages come back as duplicates; any that arrived after it, once.
    const held = s.board.get(s.bridge.name)!.received;
    expect(held).toBeGreaterThan(0);
    expect(await jsm.consumers.info(s.stream, defaultDurable(s.bridge.name))).toMatchObject({ num_pending: 0, num_ack_pending: 3 });
    // The connection goes away between taking the messages and the commit, as in a crash.
    await connections.close();
    await brokenUnder;
    const taken = untilTaken(bridge.events, 3 + held);
    await locker.query('commit');
    released = true;
    const passes = await taken;
    expect(sum(passes, 'recorded')).toBe(3);
    // Each held one comes back at least once and is known as a duplicate; on a loaded machine one may
    // come back twice (a pass slower than ackWait), which is still stored once.
    expect(sum(passes, 'duplicates')).toBeGreaterThanOrEqual(held);
    expect(await t.db.deadLetter.count()).toBe(3);
    await acked(s.stream, defaultDurable(s.bridge.name));
    expect(await t.db.deadLetter.count()).toBe(3);
  }, 90_000);
});

describe('pause and resume', () => {
  it('stops taking when paused, stays paused across a restart, takes what waited on resume; bridges shows it without credentials', async () => {
    const url = server.url.replace('nats://', 'nats://lazarus:s3cretpass@');
    const s = await setup((stream) => ({ stream }), { url });
    const api = testServer(t.db, { bridges: s.board });
    const first = s.start();
    await once(first.events, 'passCompleted');
    const pausedPass = untilPaused(first.events);
    const paused = await execute(api, `mutation ($name: String!) { pauseBridge(name: $name) { name state paused } }`, { name: s.bridge.name });
    expect(paused.body).toEqual({ data: { pauseBridge: { name: s.bridge.name, state: 'PAUSED', paused: true } } });
    await pausedPass;
    await js.publish(`orders${n}.dlq`, '{"waiting": 1}');
    await js.publish(`orders${n}.dlq`, '{"waiting": 2}');

    await first.stop();
    running.splice(running.indexOf(first), 1);
    const second = s.start();
    const [pass] = await once(second.events, 'passCompleted') as [BridgePassSummary];
    expect(pass).toMatchObject({ paused: true, claimed: 0 });
    expect(await jsm.consumers.info(s.stream, defaultDurable(s.bridge.name))).toMatchObject({ num_pending: 2, num_ack_pending: 0 });
    expect(await t.db.deadLetter.count()).toBe(0);

    const taken = untilTaken(second.events, 2);
    const resumed = await execute(api, `mutation ($name: String!) { resumeBridge(name: $name) { state paused } }`, { name: s.bridge.name });
    // The runner may have connected already by the time the answer is read: the poke wakes it at once.
    expect(resumed.body).toEqual({ data: { resumeBridge: { state: expect.stringMatching(/^CONNECT(ING|ED)$/), paused: false } } });
    await taken;
    expect(await t.db.deadLetter.count()).toBe(2);

    // The lag is read beside the batches (every 2 s, runBridge.ts): it is known a moment after the resume.
    let shown = '';
    await vi.waitFor(async () => {
      const { body } = await execute<{ bridges: Record<string, unknown>[] }>(api, `{ bridges { name kind description state paused received recorded duplicates poison refused lag lastError } }`);
      expect(body.data?.bridges).toEqual([{
        name: s.bridge.name, kind: 'nats', description: `nats stream ${s.stream} on 127.0.0.1:${server.port}`,
        state: 'CONNECTED', paused: false, received: 2, recorded: 2, duplicates: 0, poison: 0, refused: 0, lag: expect.any(Number), lastError: null,
      }]);
      shown = JSON.stringify(body);
    }, { timeout: 10_000, interval: 50 });
    expect(shown).not.toContain('s3cretpass');
  });
});

describe('declarations', () => {
  it('refuses settings that name both modes or neither, or a bad URL, naming the field', () => {
    const declare = (settings: Record<string, unknown>) => () => resolveBridges([{ name: 'bad', kind: 'nats', settings }], BRIDGE_KINDS);
    expect(declare({ url: 'nats://127.0.0.1:4222', stream: 'DLQ', consumers: [{ stream: 'ORDERS' }] })).toThrow(/^LAZARUS_BRIDGES: bridge "bad" \(nats\): settings\.consumers: give either consumers/);
    expect(declare({ url: 'nats://127.0.0.1:4222' })).toThrow(BridgeDeclarationError);
    expect(declare({ url: 'http://127.0.0.1', stream: 'DLQ' })).toThrow(/settings\.url: url must be nats:\/\/host:port/);
    expect(declare({ url: 'nats://127.0.0.1', stream: 'DLQ', filterSubject: 'a.>.b' })).toThrow(/settings\.filterSubject/);
    expect(declare({ url: 'nats://127.0.0.1', consumers: [{ stream: 'OR.DERS' }] })).toThrow(/settings\.consumers\.0\.stream/);
  });
});
