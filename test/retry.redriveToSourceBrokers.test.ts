// Redrive to source through the real NATS and Redis bridges: events taken in from a JetStream server of
// this file's own (advisories of a consumer that gave up, and a dead-letter stream) and from the local
// Redis (a stream key of each test's own), requeued with destination SOURCE, and consumed again at
// the place they came from, with message id <id> then <id>.<generation>.
import { randomUUID } from 'node:crypto';
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BridgeDeclaration } from '../src/config.ts';
import { findSourceRedirect } from '../src/db/models/sourceRedirects.ts';
import { createOutageLog } from '../src/db/outageLog.ts';
import { createBridgeBoard, resolveBridges } from '../src/workers/bridges/bridgeBoard.ts';
import { BRIDGE_KINDS } from '../src/workers/bridges/registry.ts';
import { startBridge, type RunningBridge } from '../src/workers/bridges/runBridge.ts';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { createNatsTarget } from '../src/workers/targets/nats.ts';
import { createRedisTarget } from '../src/workers/targets/redis.ts';
import { createSourceResolver } from '../src/workers/targets/sourceTarget.ts';
import { createTargetDeliver, kindMap } from '../src/workers/targets/targetKind.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { startNatsServer, type NatsServer } from './helpers/natsServer.ts';
import { attemptsOf, passDeps, silentLogger } from './helpers/retry.ts';

const t = useTestDatabase();
const natsTarget = createNatsTarget();
const redisTarget = createRedisTarget();
let server: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let redis: Redis;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: [server.url] });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  redis = new Redis('redis://127.0.0.1:6379');
});
afterAll(async () => {
  await natsTarget.close!();
  await redisTarget.close!();
  await nc?.close();
  await server?.stop();
  await redis?.quit();
});

const running: RunningBridge[] = [];
const keys: string[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
  if (keys.length > 0) await redis.del(...keys.splice(0));
});

const REQUEUE = `mutation ($input: RequeueDeadLettersInput!) {
  requeueDeadLetters(input: $input) { __typename ... on RequeueResult { count withoutSource } }
}`;

function wire(declarations: BridgeDeclaration[]) {
  const bridges = resolveBridges(declarations, BRIDGE_KINDS);
  const board = createBridgeBoard(bridges);
  const deliver = createTargetDeliver(kindMap([natsTarget, redisTarget]), {
    resolveSource: createSourceResolver({ bridges: declarations, findRedirect: (kind, place) => findSourceRedirect(t.db, kind, place) }),
  });
  return { bridge: bridges[0]!, board, deliver, api: testServer(t.db, { bridges: board }) };
}
type Wired = ReturnType<typeof wire>;

/** Runs the bridge until `count` dead letters are stored, then stops it. */
async function takeIn(w: Wired, count: number, before: () => Promise<void> = async () => {}) {
  const r = startBridge({ bridge: w.bridge, board: w.board, db: t.db, logger: silentLogger, outage: createOutageLog(silentLogger), rules: { allowedEventTypes: [] } });
  running.push(r);
  await new Promise((resolve) => r.events.once('passCompleted', resolve));
  await before();
  while ((await t.db.deadLetter.count()) < count) await new Promise((resolve) => r.events.once('passCompleted', resolve));
  await r.stop();
  running.splice(running.indexOf(r), 1);
}

async function requeueToSource(w: Wired, ids: bigint[]) {
  const answer = await execute(w.api, REQUEUE, { input: { ids: ids.map(String), force: true, destination: 'SOURCE' } });
  expect(answer.body).toEqual({ data: { requeueDeadLetters: { __typename: 'RequeueResult', count: ids.length, withoutSource: 0 } } });
}

let n = 0;

describe('redrive to source (NATS JetStream)', () => {
  /** Naks each delivery of `consumer` until JetStream gave up on `count` messages (max_deliver 2). */
  async function giveUp(stream: string, count: number) {
    const sub = nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.work`, { max: count });
    await nc.flush();
    let advisories = 0;
    const seen = (async () => {
      for await (const _ of sub) advisories += 1;
    })();
    const c = await js.consumers.get(stream, 'work');
    while (advisories < count) (await c.next({ expires: 1_000 }))?.nak();
    await seen;
  }

  it('publishes a message a consumer gave up on back to its original subject, where the consumer reads it again, with Nats-Msg-Id <id> then <id>.1', async () => {
    n += 1;
    const stream = `ORDERS${n}`;
    const subject = `orders${n}.placed`;
    await jsm.streams.add({ name: stream, subjects: [`orders${n}.>`], retention: RetentionPolicy.Limits });
    await jsm.consumers.add(stream, { durable_name: 'work', ack_policy: AckPolicy.Explicit, max_deliver: 2 });
    const w = wire([{ name: `nats${n}`, kind: 'nats', settings: { url: server.url, consumers: [{ stream, consumer: 'work' }] } }]);
    await takeIn(w, 1, async () => {
      await js.publish(subject, JSON.stringify({ orderId: 7 }));
      await giveUp(stream, 1);
    });
    const row = await t.db.deadLetter.findFirstOrThrow();
    expect(row.origin).toMatchObject({ kind: 'nats', bridge: `nats${n}`, stream, subject, sequence: 1 });

    await requeueToSource(w, [row.id]);
    expect(await runRetryPass(passDeps(t.db, { deliver: w.deliver }))).toMatchObject({ claimed: 1, succeeded: 1 });
    const consumer = await js.consumers.get(stream, 'work');
    const again = (await consumer.next({ expires: 5_000 }))!;
    expect(again.subject).toBe(subject);
    expect(again.json()).toEqual({ orderId: 7 });
    expect(again.headers?.get('Nats-Msg-Id')).toBe(String(row.id));
    expect(again.headers?.get('Lazarus-Id')).toBe(String(row.id));
    again.ack();

    await requeueToSource(w, [row.id]);
    expect(await runRetryPass(passDeps(t.db, { deliver: w.deliver }))).toMatchObject({ claimed: 1, succeeded: 1 });
    const next = (await consumer.next({ expires: 5_000 }))!;
    expect(next.headers?.get('Nats-Msg-Id')).toBe(`${row.id}.1`);
    next.ack();
  });

  it('publishes the original bytes back with their Content-Type and headers, not the JSON wrapper', async () => {
    n += 1;
    const stream = `BLOBS${n}`;
    const subject = `blobs${n}.image`;
    await jsm.streams.add({ name: stream, subjects: [`blobs${n}.>`], retention: RetentionPolicy.Limits });
    await jsm.consumers.add(stream, { durable_name: 'work', ack_policy: AckPolicy.Explicit, max_deliver: 2 });
    const w = wire([{ name: `blobs${n}`, kind: 'nats', settings: { url: server.url, consumers: [{ stream, consumer: 'work' }] } }]);
    const blob = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0x0d, 0x0a]);
    await takeIn(w, 1, async () => {
      const h = natsHeaders();
      h.set('Content-Type', 'image/png');
      h.set('Tenant', 'acme');
      h.append('Trace', 'a');
      h.append('Trace', 'b');
      await js.publish(subject, blob, { headers: h });
      await giveUp(stream, 1);
    });
    const row = await t.db.deadLetter.findFirstOrThrow();
    expect(row.payload).toEqual({ $binary: Buffer.from(blob).toString('base64'), contentType: 'image/png' });

    await requeueToSource(w, [row.id]);
    expect(await runRetryPass(passDeps(t.db, { deliver: w.deliver }))).toMatchObject({ claimed: 1, succeeded: 1 });
    const again = (await (await js.consumers.get(stream, 'work')).next({ expires: 5_000 }))!;
    expect(Buffer.from(again.data).equals(Buffer.from(blob))).toBe(true);
    expect(again.headers?.values('Content-Type')).toEqual(['image/png']);
    expect(again.headers?.get('Tenant')).toBe('acme');
    expect(again.headers?.values('Trace')).toEqual(['a', 'b']);
    expect(again.headers?.get('Nats-Msg-Id')).toBe(String(row.id));
    again.ack();
  });

  it('sends a dead-letter stream message to the subject its Lazarus-Source-Subject header names; without one, not back into the dead-letter stream but where a redirect says', async () => {
    n += 1;
    const dlq = `DLQ${n}`;
    const work = `WORK${n}`;
    await jsm.streams.add({ name: dlq, subjects: [`dlq${n}.>`], retention: RetentionPolicy.Limits });
    await jsm.streams.add({ name: work, subjects: [`work${n}.>`], retention: RetentionPolicy.Limits });
    const w = wire([{ name: `natsdlq${n}`, kind: 'nats', settings: { url: server.url, stream: dlq } }]);
    await takeIn(w, 2, async () => {
      const named = natsHeaders();
      named.set('Lazarus-Source-Subject', `work${n}.paid`);
      await js.publish(`dlq${n}.paid`, JSON.stringify({ named: true }), { headers: named });
      await js.publish(`dlq${n}.refunded`, JSON.stringify({ named: false }));
    });
    const [named, plain] = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(named!.origin).toMatchObject({ kind: 'nats', stream: dlq, subject: `dlq${n}.paid`, sourceSubject: `work${n}.paid` });
    expect(plain!.origin).not.toHaveProperty('sourceSubject');

    await requeueToSource(w, [named!.id, plain!.id]);
    expect(await runRetryPass(passDeps(t.db, { deliver: w.deliver }))).toMatchObject({ claimed: 2, succeeded: 1, retried: 1 });
    const arrived = await jsm.streams.getMessage(work, { last_by_subj: `work${n}.paid` });
    expect(arrived!.json()).toEqual({ named: true });
    expect(arrived!.header.get('Nats-Msg-Id')).toBe(String(named!.id));
    expect((await attemptsOf(t.db, plain!.id))[0]!.errorMessage).toBe(
      `redrive to source: nats dlq${n}.refunded is what bridge "natsdlq${n}" reads its dead letters from, so it would come straight back; ` +
      `add a redirect from dlq${n}.refunded to the source, or have the producer name it (header Lazarus-Source-Subject)`);
    expect((await jsm.streams.info(dlq)).state.messages).toBe(2);

    // With a redirect, the next attempt goes there.
    await t.db.sourceRedirect.create({ data: { kind: 'nats', fromPlace: `dlq${n}.refunded`, toPlace: `work${n}.refunded`, updatedBy: 'test' } });
    await requeueToSource(w, [plain!.id]);
    expect(await runRetryPass(passDeps(t.db, { deliver: w.deliver }))).toMatchObject({ claimed: 1, succeeded: 1 });
    const redirected = await jsm.streams.getMessage(work, { last_by_subj: `work${n}.refunded` });
    expect(redirected!.json()).toEqual({ named: false });
  });
});

describe('redrive to source (Redis Streams)', () => {
  function redisSetup() {
    n += 1;
    const dead = `lazarus-test:dead:${randomUUID()}`;
    const work = `lazarus-test:work:${randomUUID()}`;
    keys.push(dead, work, `${work}.v2`);
    return { dead, work, w: wire([{ name: `redis${n}`, kind: 'redis', settings: { url: 'redis://127.0.0.1:6379', stream: dead, consumer: 'c1' } }]) };
  }

  it('adds an entry back to the stream its source-stream field names, read again there by a consumer group, with id <id> then <id>.1', async () => {
    const { dead, work, w } = redisSetup();
    await redis.xgroup('CREATE', work, 'workers', '$', 'MKSTREAM');
    await redis.xadd(dead, '*', 'payload', JSON.stringify({ orderId: 9 }), 'source-stream', work, 'event-type', 'order.paid');
    await takeIn(w, 1);
    const row = await t.db.deadLetter.findFirstOrThrow();
    expect(row.origin).toMatchObject({ kind: 'redis', bridge: w.bridge.name, stream: dead, sourceStream: work });

    await requeueToSource(w, [row.id]);
    expect(await runRetryPass(passDeps(t.db, { deliver: w.deliver }))).toMatchObject({ claimed: 1, succeeded: 1 });
    const read = async () => {
      const answer = await redis.xreadgroup('GROUP', 'workers', 'w1', 'COUNT', 10, 'STREAMS', work, '>') as [string, [string, string[]][]][];
      const entries = answer[0]![1];
      expect(entries).toHaveLength(1);
      const fields = entries[0]![1];
      return Object.fromEntries(fields.flatMap((_: string, i: number) => (i % 2 === 0 ? [[fields[i]!, fields[i + 1]!]] : []))) as Record<string, string>;
    };
    const first = await read();
    expect(first).toMatchObject({ id: String(row.id), 'lazarus-id': String(row.id) });
    expect(JSON.parse(first.payload!)).toEqual({ orderId: 9 });
    expect(await redis.xlen(dead)).toBe(1);

    await requeueToSource(w, [row.id]);
    expect(await runRetryPass(passDeps(t.db, { deliver: w.deliver }))).toMatchObject({ claimed: 1, succeeded: 1 });
    expect((await read()).id).toBe(`${row.id}.1`);
  });

  it('adds the original bytes and fields back, not the JSON wrapper', async () => {
    const { dead, work, w } = redisSetup();
    const blob = Buffer.from([0x00, 0xff, 0xfe, 0x7b, 0x0a]);
    await redis.xadd(dead, '*', 'payload', blob, 'source-stream', work, 'tenant', 'acme', 'raw', Buffer.from([0xc3, 0x28]));
    await redis.xadd(dead, '*', 'payload', 'just text', 'source-stream', work);
    await takeIn(w, 2);
    const [binary, text] = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(binary!.payload).toEqual({ $binary: blob.toString('base64') });
    expect(text!.payload).toEqual({ $text: 'just text' });

    await requeueToSource(w, [binary!.id, text!.id]);
    expect(await runRetryPass(passDeps(t.db, { deliver: w.deliver }))).toMatchObject({ claimed: 2, succeeded: 2 });
    const entries = await redis.xrangeBuffer(work, '-', '+');
    const byId = new Map(entries.map(([, fields]) => {
      const map = new Map<string, Buffer>();
      for (let i = 0; i < fields.length; i += 2) map.set(fields[i]!.toString(), fields[i + 1]!);
      return [map.get('id')!.toString(), map];
    }));
    const first = byId.get(String(binary!.id))!;
    expect(first.get('payload')!.equals(blob)).toBe(true);
    expect(first.get('tenant')!.toString()).toBe('acme');
    expect(first.get('raw')!.equals(Buffer.from([0xc3, 0x28]))).toBe(true);
    expect(first.get('lazarus-id')!.toString()).toBe(String(binary!.id));
    expect(byId.get(String(text!.id))!.get('payload')!.toString()).toBe('just text');
  });

  it('refuses to add an entry without a source stream back to the stream the bridge reads, and follows a redirect', async () => {
    const { dead, work, w } = redisSetup();
    await redis.xadd(dead, '*', 'payload', '{"orderId": 10}');
    await takeIn(w, 1);
    const row = await t.db.deadLetter.findFirstOrThrow();
    await requeueToSource(w, [row.id]);
    expect(await runRetryPass(passDeps(t.db, { deliver: w.deliver }))).toMatchObject({ claimed: 1, retried: 1 });
    expect((await attemptsOf(t.db, row.id))[0]!.errorMessage).toBe(
      `redrive to source: redis ${dead} is what bridge "${w.bridge.name}" reads its dead letters from, so it would come straight back; ` +
      `add a redirect from ${dead} to the source, or have the producer name it (field source-stream)`);
    expect(await redis.xlen(dead)).toBe(1);

    await t.db.sourceRedirect.create({ data: { kind: 'redis', fromPlace: dead, toPlace: `${work}.v2`, updatedBy: 'test' } });
    await requeueToSource(w, [row.id]);
    expect(await runRetryPass(passDeps(t.db, { deliver: w.deliver }))).toMatchObject({ claimed: 1, succeeded: 1 });
    const entries = await redis.xrange(`${work}.v2`, '-', '+');
    expect(entries).toHaveLength(1);
    expect(entries[0]![1].slice(0, 2)).toEqual(['id', String(row.id)]);
  });
});
