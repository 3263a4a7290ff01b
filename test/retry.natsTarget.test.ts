// The `nats` target kind against a real JetStream server of this file's own: a publish with ack
// through the retry loop, Nats-Msg-Id de-duplication, the failure kinds, connection health across a
// server restart, and no credential in any answer.
import { createHash } from 'node:crypto';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ClaimedDeadLetter } from '../src/db/sql/claimDueDeadLetters.ts';
import { REDACTED } from '../src/domain/attemptDetails.ts';
import type { RetryPolicy } from '../src/generated/prisma/client.ts';
import type { Deliver, DeliveryResult } from '../src/workers/retry/delivery.ts';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { createNatsConnections, type NatsConnections } from '../src/workers/brokers/natsConnections.ts';
import { createNatsTarget } from '../src/workers/targets/nats.ts';
import { createTargetDeliver, kindMap, type TargetKind } from '../src/workers/targets/targetKind.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { freePort, startNatsServer, type NatsServer } from './helpers/natsServer.ts';
import { attemptDetailsOf, attemptsOf, passDeps, statusOf } from './helpers/retry.ts';

const t = useTestDatabase();
let server: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let connections: NatsConnections;
let kind: TargetKind;
let results: DeliveryResult[];
let stream: string;
let subject: string;
let streamNumber = 0;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: [server.url], reconnectTimeWait: 50, maxReconnectAttempts: -1 });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});
beforeEach(async () => {
  streamNumber += 1;
  stream = `LAZARUS_T${streamNumber}`;
  subject = `t${streamNumber}.retry`;
  await jsm.streams.add({ name: stream, subjects: [`t${streamNumber}.>`] });
  connections = createNatsConnections({ reconnectBaseMs: 20, reconnectMaxMs: 200 });
  kind = createNatsTarget({ connections });
  results = [];
});
afterEach(async () => {
  await kind.close!();
  await jsm.streams.delete(stream).catch(() => {});
});

const UPSERT = `mutation ($input: UpsertRetryPolicyInput!) {
  upsertRetryPolicy(input: $input) { eventType target { kind description settings secretsSet } }
}`;
const admin = () => testServer(t.db, { authenticate: () => ({ name: 'admin-alice', role: 'admin' }) });

/** Saves the policy through GraphQL (the kind's own checks) with `settings` for the nats kind. */
async function saveTarget(settings: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const { body } = await execute(admin(), UPSERT, {
    input: { eventType: 'order.placed', allowPrivateTarget: true, maxAttempts: 5, ...extra, target: { kind: 'nats', settings } },
  });
  expect(body.errors).toBeUndefined();
  return body;
}

/** The kind's deliver, keeping each result (with its failureKind, which the table does not store). */
function recordingDeliver(): Deliver {
  const deliver = createTargetDeliver(kindMap([kind]));
  return async (event, policy, signal) => {
    const result = await deliver(event, policy, signal);
    results.push(result);
    return result;
  };
}

const pass = () => runRetryPass(passDeps(t.db, { deliver: recordingDeliver() }));

async function streamMessages() {
  const info = await jsm.streams.info(stream);
  const messages = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (m) messages.push({ subject: m.subject, id: m.header.get('Nats-Msg-Id'), headers: m.header, body: m.json() });
  }
  return messages;
}

describe('delivering to a JetStream subject', () => {
  it('publishes the payload with Nats-Msg-Id, the Lazarus id, the attempt and the source coordinates', async () => {
    await saveTarget({ url: server.url, subject, expectedStream: stream });
    const event = await insertDeadLetter(t.db, {
      payload: { orderId: 7 }, queue: 'orders', source: 'checkout',
      headers: { traceparent: '00-abc-def-01', 'Nats-Msg-Id': 'stale', tenant: 42 },
    });

    expect(await pass()).toMatchObject({ claimed: 1, succeeded: 1 });

    const [message, ...rest] = await streamMessages();
    expect(rest).toEqual([]);
    expect(message!.subject).toBe(subject);
    expect(message!.body).toEqual({ orderId: 7 });
    const id = event.id.toString();
    expect(Object.fromEntries(['Nats-Msg-Id', 'Lazarus-Id', 'Lazarus-Attempt', 'Lazarus-Event-Type', 'Lazarus-Queue', 'Lazarus-Source', 'traceparent', 'tenant', 'Content-Type']
      .map((h) => [h, message!.headers.get(h)]))).toEqual({
      'Nats-Msg-Id': id, 'Lazarus-Id': id, 'Lazarus-Attempt': '1', 'Lazarus-Event-Type': 'order.placed', 'Lazarus-Queue': 'orders',
      'Lazarus-Source': 'checkout', traceparent: '00-abc-def-01', tenant: '42', 'Content-Type': 'application/json',
    });
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  });

  it('records on the attempt the target, the headers it sent (a secret one redacted), the body size and the ack', async () => {
    const { host } = new URL(server.url);
    await saveTarget({ url: server.url, subject, expectedStream: stream });
    const event = await insertDeadLetter(t.db, {
      payload: { orderId: 7 }, queue: 'orders', source: 'checkout', headers: { traceparent: '00-abc-def-01', 'x-api-key': 'k-123' },
    });

    await pass();

    const id = event.id.toString();
    expect(await attemptDetailsOf(t.db, event.id)).toEqual([{
      target: `nats subject ${subject} on ${host}`,
      requestHeaders: {
        'nats-msg-id': id, 'nats-expected-stream': stream, 'content-type': 'application/json', 'lazarus-id': id, 'lazarus-attempt': '1',
        'lazarus-event-type': 'order.placed', 'lazarus-queue': 'orders', 'lazarus-source': 'checkout', traceparent: '00-abc-def-01', 'x-api-key': REDACTED,
      },
      requestBodyBytes: Buffer.byteLength('{"orderId": 7}'),
      requestBodySha256: createHash('sha256').update('{"orderId": 7}').digest('hex'),
      responseHeaders: { stream, seq: '1', duplicate: 'false' },
      responseBody: `stream ${stream} seq 1`,
    }]);
  });

  it('gives a requeue after SUCCEEDED the message id <id>.1, a new message for JetStream', async () => {
    await saveTarget({ url: server.url, subject });
    const event = await insertDeadLetter(t.db);
    await pass();

    await execute(testServer(t.db), 'mutation ($ids: [ID!]) { requeueDeadLetters(input: { ids: $ids, force: true }) { __typename } }', { ids: [event.id.toString()] });
    expect(await pass()).toMatchObject({ succeeded: 1 });

    expect((await streamMessages()).map((m) => m.id)).toEqual([`${event.id}`, `${event.id}.1`]);
  });

  it('is de-duplicated by JetStream when the same delivery is published twice', async () => {
    await saveTarget({ url: server.url, subject });
    const row = await insertDeadLetter(t.db);
    const policy = await t.db.retryPolicy.findUniqueOrThrow({ where: { eventType: 'order.placed' } });
    const deliver = createTargetDeliver(kindMap([kind]));
    const event = claimed(row, policy);

    const first = await deliver(event, policy, new AbortController().signal);
    const again = await deliver({ ...event, attempts: 2 }, policy, new AbortController().signal);

    expect(first).toMatchObject({ ok: true, responseBody: `stream ${stream} seq 1` });
    expect(again).toMatchObject({ ok: true, responseBody: `stream ${stream} seq 1, a duplicate JetStream dropped` });
    expect((await streamMessages()).map((m) => m.id)).toEqual([row.id.toString()]);
  });
});

describe('a delivery that fails', () => {
  it('is REJECTED when no stream takes the subject, and retried later', async () => {
    await saveTarget({ url: server.url, subject: `nobody.listens.${streamNumber}` });
    const event = await insertDeadLetter(t.db);

    expect(await pass()).toMatchObject({ retried: 1 });

    expect(results).toEqual([expect.objectContaining({ ok: false, outcome: 'FAILED', failureKind: 'REJECTED' })]);
    expect(await attemptsOf(t.db, event.id)).toEqual([expect.objectContaining({
      outcome: 'FAILED', errorMessage: `no JetStream stream takes subject nobody.listens.${streamNumber} (503 no responders)`,
    })]);
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'PENDING', attempts: 1, nextAttemptAt: expect.any(Date) });
    expect(await attemptDetailsOf(t.db, event.id)).toEqual([expect.objectContaining({
      target: expect.stringMatching(/^nats subject nobody\.listens\./), requestHeaders: expect.objectContaining({ 'nats-msg-id': event.id.toString() }), responseHeaders: null,
    })]);
  });

  it('is REJECTED when the subject belongs to another stream than expectedStream, keeping JetStream’s error code on the attempt', async () => {
    await saveTarget({ url: server.url, subject, expectedStream: 'SOMETHING_ELSE' });
    const event = await insertDeadLetter(t.db);

    await pass();

    expect(results).toEqual([expect.objectContaining({ outcome: 'FAILED', failureKind: 'REJECTED', errorMessage: expect.stringContaining('expected stream does not match') })]);
    expect((await attemptDetailsOf(t.db, event.id))[0]!.responseHeaders).toEqual({ code: '400', 'err-code': '10060', description: 'expected stream does not match' });
  });

  it('is UNREACHABLE when no server listens, keeps the event PENDING with a next attempt, and never shows the password', async () => {
    const port = await freePort();
    await saveTarget({ url: `nats://lazarus-user:pa55-w0rd-xyz@127.0.0.1:${port}`, subject });
    const event = await insertDeadLetter(t.db);

    expect(await pass()).toMatchObject({ retried: 1 });

    expect(results).toEqual([expect.objectContaining({ ok: false, outcome: 'FAILED', failureKind: 'UNREACHABLE' })]);
    const [attempt] = await attemptsOf(t.db, event.id);
    expect(attempt!.errorMessage).toMatch(new RegExp(`^cannot connect to NATS at 127\\.0\\.0\\.1:${port}: `));
    expect(attempt!.errorMessage).not.toMatch(/pa55-w0rd-xyz|lazarus-user/);
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'PENDING', attempts: 1, nextAttemptAt: expect.any(Date) });
    expect(kind.health!()).toEqual([expect.objectContaining({ target: `nats on 127.0.0.1:${port}`, state: 'DISCONNECTED', lastError: expect.not.stringMatching(/pa55/) })]);
  });
});

describe('the delivery’s signal', () => {
  it('ends a publish that waits for its ack as TIMED_OUT when the signal aborts', async () => {
    // A plain subscriber that never answers stands in for a stalled stream: the ack never comes.
    const stalled = `stalled.${streamNumber}`;
    const sub = nc.subscribe(stalled, { max: 1 });
    await nc.flush();
    await saveTarget({ url: server.url, subject: stalled }, { timeoutMs: 60_000 });
    const row = await insertDeadLetter(t.db);
    const policy = await t.db.retryPolicy.findUniqueOrThrow({ where: { eventType: 'order.placed' } });
    const controller = new AbortController();

    const delivery = createTargetDeliver(kindMap([kind]))(claimed(row, policy), policy, controller.signal);
    for await (const _message of sub) controller.abort();

    expect(await delivery).toMatchObject({ ok: false, outcome: 'TIMED_OUT', failureKind: 'TIMEOUT' });
  });
});

describe('connection health', () => {
  it('is CONNECTED after a delivery, and DISCONNECTED after close', async () => {
    await saveTarget({ url: server.url, subject });
    await insertDeadLetter(t.db);
    await pass();

    expect(kind.health!()).toEqual([{ kind: 'nats', target: `nats on 127.0.0.1:${server.port}`, state: 'CONNECTED', lastError: null, lastErrorAt: null }]);
    await kind.close!();
    expect(kind.health!()).toEqual([expect.objectContaining({ state: 'DISCONNECTED' })]);
  });

  it('goes DISCONNECTED when the server dies, fails fast as UNREACHABLE meanwhile, and delivers again once it is back', async () => {
    await saveTarget({ url: server.url, subject, expectedStream: stream });
    const before = await insertDeadLetter(t.db);
    await pass();
    const connection = connections.get(server.url);

    const down = connection.whenState('DISCONNECTED');
    await server.kill();
    await down;
    const during = await insertDeadLetter(t.db);
    expect(await pass()).toMatchObject({ retried: 1 });
    expect(results.at(-1)).toMatchObject({ failureKind: 'UNREACHABLE', errorMessage: expect.stringContaining('reconnecting') });

    await server.start();
    await connection.whenState('CONNECTED');
    await t.db.deadLetter.update({ where: { id: during.id }, data: { nextAttemptAt: new Date(0) } });
    expect(await pass()).toMatchObject({ succeeded: 1 });

    expect(kind.health!()).toEqual([expect.objectContaining({ state: 'CONNECTED', lastError: null })]);
    expect((await streamMessages()).map((m) => m.id)).toEqual([before.id.toString(), during.id.toString()]);
  });
});

describe('saving a nats target', () => {
  it('is listed in retryTargetKinds with its settings, the URL a secret', async () => {
    const { body } = await execute(admin(), '{ retryTargetKinds { kind label fields { name isSecret isRequired } } }');

    expect((body.data as { retryTargetKinds: { kind: string }[] }).retryTargetKinds.find((k) => k.kind === 'nats')).toEqual({
      kind: 'nats', label: 'NATS JetStream',
      fields: [
        { name: 'url', isSecret: true, isRequired: true },
        { name: 'subject', isSecret: false, isRequired: true },
        { name: 'expectedStream', isSecret: false, isRequired: false },
      ],
    });
  });

  it('answers with the subject and host only: no user, password or token', async () => {
    for (const url of ['nats://alice:s3cret-pass@nats.example.com:4222', 'nats://tok3n-value-123@nats.example.com']) {
      const body = await saveTarget({ url, subject: 'orders.retry' }, { allowPrivateTarget: false });

      expect(body.data).toEqual({
        upsertRetryPolicy: {
          eventType: 'order.placed',
          target: { kind: 'nats', description: 'nats subject orders.retry on nats.example.com', settings: { subject: 'orders.retry' }, secretsSet: ['url'] },
        },
      });
      expect(JSON.stringify(body)).not.toMatch(/s3cret|tok3n|alice/);
    }
  });

  it.each([
    [{ url: 'http://nats.example.com', subject: 'a' }, 'target.settings.url', 'INVALID_URL'],
    [{ url: 'nats://10.0.0.8:4222', subject: 'a' }, 'target.settings.url', 'PRIVATE_TARGET'],
    [{ url: 'nats://nats.example.com,nats://localhost', subject: 'a' }, 'target.settings.url', 'PRIVATE_TARGET'],
    [{ url: 'nats://a:b@nats.example.com,nats://c:d@nats2.example.com', subject: 'a' }, 'target.settings.url', 'INVALID_URL'],
    [{ url: 'nats://nats.example.com', subject: 'orders.*' }, 'target.settings.subject', 'INVALID_SETTING'],
    [{ url: 'nats://nats.example.com', subject: 'orders..retry' }, 'target.settings.subject', 'INVALID_SETTING'],
    [{ url: 'nats://nats.example.com' }, 'target.settings.subject', 'INVALID_SETTING'],
    [{ url: 'nats://nats.example.com', subject: 'a', expectedStream: 'a.b' }, 'target.settings.expectedStream', 'INVALID_SETTING'],
    [{ url: 'nats://nats.example.com', subject: 'a', queue: 'q' }, 'target.settings.queue', 'INVALID_SETTING'],
  ])('refuses %j with BAD_USER_INPUT on %s (%s), and writes nothing', async (settings, field, reason) => {
    const before = await t.db.$queryRaw`select * from retry_policies order by event_type`;

    const { body } = await execute(admin(), UPSERT, { input: { eventType: 'order.placed', target: { kind: 'nats', settings } } });

    expect(body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field, reason });
    expect(await t.db.$queryRaw`select * from retry_policies order by event_type`).toEqual(before);
  });
});

function claimed(row: { id: bigint; payload: unknown; occurredAt: Date }, policy: RetryPolicy): ClaimedDeadLetter {
  return {
    id: row.id, eventType: 'order.placed', queue: 'default', source: 'unknown', orderingKey: null, payload: row.payload, payloadJson: JSON.stringify(row.payload), headers: {},
    errorKind: 'DOWNSTREAM_API', errorMessage: 'x', attempts: 1, maxAttempts: null, leaseToken: 'token', occurredAt: row.occurredAt,
    policy, deliveryGeneration: 0,
  };
}
