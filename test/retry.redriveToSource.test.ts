// Redrive to source against the real local RabbitMQ: a message dead-lettered by its queue, taken in
// by the bridge, requeued with destination SOURCE and consumed again at the queue it died in.
import amqp from 'amqplib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findSourceRedirect } from '../src/db/models/sourceRedirects.ts';
import { createOutageLog } from '../src/db/outageLog.ts';
import { createBridgeBoard, resolveBridges } from '../src/workers/bridges/bridgeBoard.ts';
import { BRIDGE_KINDS } from '../src/workers/bridges/registry.ts';
import { startBridge, type RunningBridge } from '../src/workers/bridges/runBridge.ts';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { createAmqpTarget } from '../src/workers/targets/amqp.ts';
import { createSourceResolver } from '../src/workers/targets/sourceTarget.ts';
import { createTargetDeliver, kindMap } from '../src/workers/targets/targetKind.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { declareDeadLetterSetup, rejectMessages, useRabbitVhost } from './helpers/rabbitVhost.ts';
import { attemptsOf, passDeps, silentLogger, statusOf } from './helpers/retry.ts';

const t = useTestDatabase();
const vhost = useRabbitVhost();
const amqpTarget = createAmqpTarget();
afterAll(() => amqpTarget.close!());

const running: RunningBridge[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

const REQUEUE = `mutation ($input: RequeueDeadLettersInput!) {
  requeueDeadLetters(input: $input) {
    __typename
    ... on RequeueResult { count ids dryRun withoutSource }
    ... on NoSourceError { code message count ids }
  }
}`;

let n = 0;
async function setup() {
  n += 1;
  const names = { work: `work${n}`, dlx: `dlx${n}`, dlq: `dlq${n}`, exchange: `shop${n}` };
  const { connection, channel } = await declareDeadLetterSetup(vhost.url, names);
  const declarations = [{ name: `orders${n}`, kind: 'rabbitmq', settings: { url: vhost.url, queue: names.dlq } }];
  const bridges = resolveBridges(declarations, BRIDGE_KINDS);
  const board = createBridgeBoard(bridges);
  const server = testServer(t.db, { bridges: board });
  const deliver = createTargetDeliver(kindMap([amqpTarget]), {
    resolveSource: createSourceResolver({ bridges: declarations, findRedirect: (kind, place) => findSourceRedirect(t.db, kind, place) }),
  });
  return { names, connection, channel, bridge: bridges[0]!, board, server, deliver };
}

/** Takes `count` dead letters in through a bridge over the DLQ, then stops it. */
async function takeIn(s: Awaited<ReturnType<typeof setup>>, count: number) {
  const r = startBridge({ bridge: s.bridge, board: s.board, db: t.db, logger: silentLogger, outage: createOutageLog(silentLogger), rules: { allowedEventTypes: [] } });
  running.push(r);
  while ((await t.db.deadLetter.count()) < count) await new Promise((resolve) => r.events.once('passCompleted', resolve));
  await r.stop();
  running.splice(running.indexOf(r), 1);
}

/** The next message on `queue`, acked. */
async function consumeOne(channel: amqp.Channel, queue: string): Promise<amqp.ConsumeMessage> {
  return new Promise((resolve) => {
    void channel.consume(queue, (m) => {
      if (!m) return;
      channel.ack(m);
      void channel.cancel(m.fields.consumerTag).then(() => resolve(m));
    });
  });
}

describe('redrive to source (RabbitMQ)', () => {
  it('sends a dead-lettered message back to the queue it died in, with message id <id> then <id>.1, though its type has no policy target', async () => {
    const s = await setup();
    s.channel.publish(s.names.exchange, 'order.placed', Buffer.from(JSON.stringify({ orderId: 7 })), { contentType: 'application/json', messageId: 'm-1' });
    await rejectMessages(s.channel, s.names.work, 1);
    await takeIn(s, 1);
    const row = (await t.db.deadLetter.findFirstOrThrow());
    // The bridge stores PENDING; a type without a policy target is held, never claimed.
    expect((await runRetryPass(passDeps(t.db, { deliver: s.deliver }))).claimed).toBe(0);

    const requeued = await execute(s.server, REQUEUE, { input: { ids: [String(row.id)], force: true, destination: 'SOURCE' } });
    expect(requeued.body).toEqual({ data: { requeueDeadLetters: { __typename: 'RequeueResult', count: 1, ids: [String(row.id)], dryRun: false, withoutSource: 0 } } });
    expect((await t.db.deadLetterState.findUniqueOrThrow({ where: { id: row.id } })).deliverToSource).toBe(true);

    const arrived = consumeOne(s.channel, s.names.work);
    expect(await runRetryPass(passDeps(t.db, { deliver: s.deliver }))).toMatchObject({ claimed: 1, succeeded: 1 });
    const message = await arrived;
    expect(message.properties.messageId).toBe(String(row.id));
    expect(JSON.parse(message.content.toString())).toEqual({ orderId: 7 });
    expect(message.properties.headers).toMatchObject({ 'x-lazarus-id': String(row.id) });
    expect(await statusOf(t.db, row.id)).toMatchObject({ status: 'SUCCEEDED' });
    // Cleared once it finished.
    expect((await t.db.deadLetterState.findUniqueOrThrow({ where: { id: row.id } })).deliverToSource).toBeNull();

    // Again from SUCCEEDED: the next delivery generation.
    await execute(s.server, REQUEUE, { input: { ids: [String(row.id)], force: true, destination: 'SOURCE' } });
    const again = consumeOne(s.channel, s.names.work);
    expect(await runRetryPass(passDeps(t.db, { deliver: s.deliver }))).toMatchObject({ claimed: 1, succeeded: 1 });
    expect((await again).properties.messageId).toBe(`${row.id}.1`);
    await s.connection.close();
  });

  it('sends the original bytes back with their content type, correlation id and headers, without x-death, under Lazarus\'s message id', async () => {
    const s = await setup();
    const blob = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0xfe, 0x0d, 0x0a]);
    s.channel.publish(s.names.exchange, 'order.placed', blob, {
      contentType: 'image/png', contentEncoding: 'identity', correlationId: 'corr-1', messageId: 'theirs', replyTo: 'replies',
      headers: { tenant: 'acme', retries: 3, 'x-custom-broker': 'dropped' },
    });
    s.channel.publish(s.names.exchange, 'order.placed', Buffer.from('plain text: ünïcode\n'), { contentType: 'text/plain; charset=utf-8', correlationId: 'corr-2' });
    await rejectMessages(s.channel, s.names.work, 2);
    await takeIn(s, 2);
    const [binary, text] = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(binary!.payload).toEqual({ $binary: blob.toString('base64'), contentType: 'image/png', contentEncoding: 'identity' });
    expect(text!.payload).toEqual({ $text: 'plain text: ünïcode\n', contentType: 'text/plain; charset=utf-8' });

    await execute(s.server, REQUEUE, { input: { ids: [String(binary!.id), String(text!.id)], destination: 'SOURCE' } });
    const arrived: amqp.ConsumeMessage[] = [];
    const both = new Promise<void>((resolve) => {
      void s.channel.consume(s.names.work, (m) => {
        arrived.push(m!);
        s.channel.ack(m!);
        if (arrived.length === 2) resolve();
      });
    });
    expect(await runRetryPass(passDeps(t.db, { deliver: s.deliver }))).toMatchObject({ claimed: 2, succeeded: 2 });
    await both;
    const [first, second] = arrived.sort((a, b) => Number(a.properties.messageId) - Number(b.properties.messageId));
    expect(first!.content.equals(blob)).toBe(true);
    expect(first!.properties).toMatchObject({ contentType: 'image/png', contentEncoding: 'identity', correlationId: 'corr-1', replyTo: 'replies', messageId: String(binary!.id) });
    expect(first!.properties.headers).toMatchObject({ tenant: 'acme', retries: 3, 'x-lazarus-id': String(binary!.id) });
    expect(Object.keys(first!.properties.headers!).filter((h) => h.startsWith('x-') && !h.startsWith('x-lazarus-'))).toEqual([]);
    expect(second!.content.toString('utf8')).toBe('plain text: ünïcode\n');
    expect(second!.properties).toMatchObject({ contentType: 'text/plain; charset=utf-8', correlationId: 'corr-2', messageId: String(text!.id) });
    await s.connection.close();
  });

  it('follows a redirect to another queue', async () => {
    const s = await setup();
    await s.channel.assertQueue(`${s.names.work}.v2`, { durable: false });
    const row = await insertDeadLetter(t.db, { origin: { kind: 'amqp', bridge: s.bridge.name, vhost: vhost.name, queue: s.names.work, exchange: '', routingKeys: [] } });
    await t.db.sourceRedirect.create({ data: { kind: 'amqp', fromPlace: s.names.work, toPlace: `${s.names.work}.v2`, updatedBy: 'test' } });
    await execute(s.server, REQUEUE, { input: { ids: [String(row.id)], destination: 'SOURCE' } });
    const arrived = consumeOne(s.channel, `${s.names.work}.v2`);
    expect(await runRetryPass(passDeps(t.db, { deliver: s.deliver }))).toMatchObject({ claimed: 1, succeeded: 1 });
    expect((await arrived).properties.messageId).toBe(String(row.id));
    await s.connection.close();
  });

  it('fails the attempt as unroutable when the source queue is gone', async () => {
    const s = await setup();
    const row = await insertDeadLetter(t.db, { origin: { kind: 'amqp', bridge: s.bridge.name, vhost: vhost.name, queue: 'no.such.queue', exchange: '', routingKeys: [] } });
    await execute(s.server, REQUEUE, { input: { ids: [String(row.id)], destination: 'SOURCE' } });
    expect(await runRetryPass(passDeps(t.db, { deliver: s.deliver }))).toMatchObject({ claimed: 1, retried: 1 });
    expect((await attemptsOf(t.db, row.id))[0]!.errorMessage).toMatch(/unroutable: 312 NO_ROUTE/);
    await s.connection.close();
  });

  it('refuses a requeue to source of events without a usable source, and a dry run counts them', async () => {
    const s = await setup();
    const ghost = await insertDeadLetter(t.db, { origin: { kind: 'amqp', bridge: 'ghost', vhost: '/', queue: 'q', exchange: '', routingKeys: [] } });
    const plain = await insertDeadLetter(t.db);
    const ok = await insertDeadLetter(t.db, { origin: { kind: 'amqp', bridge: s.bridge.name, vhost: '/', queue: 'q', exchange: '', routingKeys: [] } });
    const ids = [ghost.id, plain.id, ok.id].map(String);
    const refused = await execute(s.server, REQUEUE, { input: { ids, destination: 'SOURCE' } });
    expect(refused.body.data).toEqual({ requeueDeadLetters: expect.objectContaining({ __typename: 'NoSourceError', code: 'VALIDATION', count: 2, ids: [ids[0], ids[1]] }) });
    expect((refused.body.data as { requeueDeadLetters: { message: string } }).requeueDeadLetters.message).toMatch(/2 of the selected events cannot be redriven to source/);
    expect(await t.db.deadLetterState.count({ where: { deliverToSource: true } })).toBe(0);

    const dry = await execute(s.server, REQUEUE, { input: { filter: { eventTypes: ['order.placed'] }, destination: 'SOURCE', dryRun: true } });
    expect(dry.body.data).toEqual({ requeueDeadLetters: { __typename: 'RequeueResult', count: 3, ids, dryRun: true, withoutSource: 2 } });

    // Written around the API: the attempt fails with INVALID_TARGET naming the undeclared bridge.
    await t.db.deadLetterState.update({ where: { id: ghost.id }, data: { deliverToSource: true } });
    await t.db.deadLetterState.updateMany({ where: { id: { in: [plain.id, ok.id] } }, data: { status: 'RESOLVED' } });
    expect(await runRetryPass(passDeps(t.db, { deliver: s.deliver }))).toMatchObject({ claimed: 1, retried: 1 });
    expect((await attemptsOf(t.db, ghost.id))[0]!.errorMessage).toBe(
      'redrive to source: source bridge "ghost" is not declared in LAZARUS_BRIDGES; declare it to redrive to amqp q');
    await s.connection.close();
  });

  it('keeps redirect rules over GraphQL: upsert, list with whether the destination was seen, refusals, delete', async () => {
    const s = await setup();
    await insertDeadLetter(t.db, { origin: { kind: 'amqp', bridge: s.bridge.name, vhost: '/', queue: 'orders.v2', exchange: '', routingKeys: [] } });
    const UPSERT = `mutation ($input: SourceRedirectInput!) { upsertSourceRedirect(input: $input) {
      __typename ... on SourceRedirect { id kind fromPlace toPlace toBridge isSeenDestination } ... on ValidationError { field message } } }`;
    const seen = await execute(s.server, UPSERT, { input: { kind: 'amqp', fromPlace: 'orders', toPlace: 'orders.v2', toBridge: s.bridge.name } });
    expect(seen.body.data).toEqual({ upsertSourceRedirect: expect.objectContaining({ __typename: 'SourceRedirect', toPlace: 'orders.v2', isSeenDestination: true }) });
    await execute(s.server, UPSERT, { input: { kind: 'nats', fromPlace: 'orders.retry', toPlace: 'orders.nowhere' } });
    const listed = await execute(s.server, '{ sourceRedirects { kind fromPlace toPlace isSeenDestination } }');
    expect(listed.body.data).toEqual({ sourceRedirects: [
      { kind: 'amqp', fromPlace: 'orders', toPlace: 'orders.v2', isSeenDestination: true },
      { kind: 'nats', fromPlace: 'orders.retry', toPlace: 'orders.nowhere', isSeenDestination: false },
    ] });
    const badKind = await execute(s.server, UPSERT, { input: { kind: 'kafka', fromPlace: 'a', toPlace: 'b' } });
    expect(badKind.body.data).toEqual({ upsertSourceRedirect: { __typename: 'ValidationError', field: 'kind', message: 'kind: must be one of amqp, nats, redis' } });
    const badBridge = await execute(s.server, UPSERT, { input: { kind: 'nats', fromPlace: 'a', toPlace: 'b', toBridge: s.bridge.name } });
    expect(badBridge.body.data).toEqual({ upsertSourceRedirect: { __typename: 'ValidationError', field: 'toBridge', message: `toBridge: bridge ${s.bridge.name} serves amqp, not nats` } });
    const id = (seen.body.data as { upsertSourceRedirect: { id: string } }).upsertSourceRedirect.id;
    expect((await execute(s.server, 'mutation ($id: ID!) { deleteSourceRedirect(id: $id) }', { id })).body.data).toEqual({ deleteSourceRedirect: true });
    expect(await t.db.sourceRedirect.count()).toBe(1);
    await s.connection.close();
  });
});
