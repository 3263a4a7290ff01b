// The amqp target against the local RabbitMQ, in a vhost of this file's own: the retry pass publishes
// persistent, confirmed messages whose message-id is the delivery id; a broker that says no or
// cannot be reached is a failure of its own kind; credentials never leave the settings.
import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { REDACTED } from '../src/domain/attemptDetails.ts';
import { upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import type { Deliver, DeliveryResult } from '../src/workers/retry/delivery.ts';
import { createRetryMetrics } from '../src/workers/retry/metrics.ts';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { TARGET_KINDS } from '../src/workers/targets/registry.ts';
import { closeTargetKinds, createTargetDeliver, targetHealth } from '../src/workers/targets/targetKind.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { createVhost, useRabbitVhost } from './helpers/rabbitmq.ts';
import { attemptDetailsOf, attemptsOf, passDeps, statusOf } from './helpers/retry.ts';

const t = useTestDatabase();
const rabbit = useRabbitVhost();
let admin: GraphQLServer;
let viewer: GraphQLServer;

beforeAll(() => {
  admin = testServer(t.db, { authenticate: () => ({ name: 'admin-alice', role: 'admin' }) });
  viewer = testServer(t.db, { authenticate: () => ({ name: 'viewer-vic', role: 'viewer' }) });
});
afterEach(() => closeTargetKinds(TARGET_KINDS));
afterAll(() => closeTargetKinds(TARGET_KINDS));

/** The registry's deliver, keeping each result (the failure kind is not stored on the attempt). */
function recordingDeliver(results: DeliveryResult[]): Deliver {
  const deliver = createTargetDeliver(TARGET_KINDS);
  return async (event, policy, signal) => {
    const result = await deliver(event, policy, signal);
    results.push(result);
    return result;
  };
}

async function amqpPolicy(settings: Record<string, unknown>, extra: { maxAttempts?: number } = {}) {
  await upsertRetryPolicy(t.db, 'order.placed', { ...extra, allowPrivateTarget: true, target: { kind: 'amqp', settings } }, 'test', TARGET_KINDS);
}

const HEALTH = '{ retryTargetHealth { kind target state lastError lastErrorAt } }';
const UPSERT = `mutation ($input: UpsertRetryPolicyInput!) {
  upsertRetryPolicy(input: $input) { eventType target { kind description settings secretsSet } }
}`;

describe('delivering to RabbitMQ', () => {
  it('publishes a persistent, confirmed JSON message with the delivery id, Lazarus headers and the source coordinates', async () => {
    const queue = await rabbit.queueOn('orders', 'order.placed');
    await amqpPolicy({ url: rabbit.url, exchange: 'orders', routingKey: 'order.placed' });
    const event = await insertDeadLetter(t.db, {
      payload: { orderId: 7, lines: [{ sku: 'A-1' }] }, queue: 'orders.v1', source: 'checkout', headers: { tenant: 'acme', 'x-death': [{ count: 1 }] },
    });

    const summary = await runRetryPass(passDeps(t.db, { deliver: createTargetDeliver(TARGET_KINDS) }));
    const message = await rabbit.nextMessage(queue);

    expect(summary).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(JSON.parse(message.content.toString('utf8'))).toEqual({ orderId: 7, lines: [{ sku: 'A-1' }] });
    expect(message.properties).toMatchObject({ messageId: event.id.toString(), deliveryMode: 2, contentType: 'application/json', type: 'order.placed' });
    expect(message.properties.headers).toMatchObject({
      tenant: 'acme', 'x-lazarus-id': event.id.toString(), 'x-lazarus-attempt': 1, 'x-lazarus-event-type': 'order.placed',
      'x-lazarus-queue': 'orders.v1', 'x-lazarus-source': 'checkout',
    });
    expect(message.properties.headers).not.toHaveProperty('x-death');
  });

  it('records on the attempt the target, the properties and headers it sent (no credentials), the body size and the confirm', async () => {
    await rabbit.queueOn('orders', 'order.placed');
    await amqpPolicy({ url: rabbit.url, exchange: 'orders', routingKey: 'order.placed' });
    const event = await insertDeadLetter(t.db, { payload: { orderId: 7 }, queue: 'orders.v1', source: 'checkout', headers: { tenant: 'acme', 'x-api-key': 'k-123' } });

    await runRetryPass(passDeps(t.db, { deliver: createTargetDeliver(TARGET_KINDS) }));

    const id = event.id.toString();
    const [attempt, ...more] = await attemptDetailsOf(t.db, event.id);
    expect(more).toEqual([]);
    expect(attempt).toEqual({
      target: `amqp exchange orders key order.placed on 127.0.0.1:5672 vhost ${rabbit.name}`,
      requestHeaders: {
        'message-id': id, 'content-type': 'application/json', 'delivery-mode': '2 (persistent)', type: 'order.placed',
        timestamp: String(Math.floor(event.occurredAt.getTime() / 1000)), 'x-lazarus-id': id, 'x-lazarus-attempt': '1',
        'x-lazarus-event-type': 'order.placed', 'x-lazarus-queue': 'orders.v1', 'x-lazarus-source': 'checkout', tenant: 'acme', 'x-api-key': REDACTED,
      },
      requestBodyBytes: Buffer.byteLength('{"orderId": 7}'),
      requestBodySha256: createHash('sha256').update('{"orderId": 7}').digest('hex'),
      responseHeaders: { confirm: 'basic.ack' },
      responseBody: null,
    });
    expect(JSON.stringify(attempt)).not.toContain('guest');
  });

  it('gives a redelivery after a requeue from SUCCEEDED the message id <id>.1', async () => {
    const queue = await rabbit.queueOn('', '');
    await amqpPolicy({ url: rabbit.url, exchange: '', routingKey: queue });
    const event = await insertDeadLetter(t.db);
    const deps = passDeps(t.db, { deliver: createTargetDeliver(TARGET_KINDS) });
    await runRetryPass(deps);
    await execute(admin, 'mutation ($ids: [ID!]) { requeueDeadLetters(input: { ids: $ids, force: true }) { __typename } }', { ids: [event.id.toString()] });

    expect(await runRetryPass(deps)).toMatchObject({ succeeded: 1 });
    const ids = [(await rabbit.nextMessage(queue)).properties.messageId, (await rabbit.nextMessage(queue)).properties.messageId];
    expect(ids).toEqual([event.id.toString(), `${event.id}.1`]);
  });

  it('fails an unroutable message as REJECTED when mandatory, and retries it', async () => {
    await rabbit.channel.assertExchange('nowhere', 'direct');
    await amqpPolicy({ url: rabbit.url, exchange: 'nowhere', routingKey: 'nobody', mandatory: 'true' }, { maxAttempts: 3 });
    const event = await insertDeadLetter(t.db);
    const results: DeliveryResult[] = [];

    expect(await runRetryPass(passDeps(t.db, { deliver: recordingDeliver(results) }))).toMatchObject({ retried: 1 });
    expect(results).toEqual([expect.objectContaining({ ok: false, outcome: 'FAILED', failureKind: 'REJECTED' })]);
    expect((await attemptsOf(t.db, event.id))[0]!.errorMessage).toMatch(/^unroutable: 312 NO_ROUTE \(exchange "nowhere", routing key "nobody"\)$/);
    expect((await attemptDetailsOf(t.db, event.id))[0]).toMatchObject({
      target: `amqp exchange nowhere key nobody on 127.0.0.1:5672 vhost ${rabbit.name}`, requestHeaders: expect.objectContaining({ mandatory: 'true' }),
      responseHeaders: { confirm: 'basic.ack', return: 'basic.return', 'reply-code': '312', 'reply-text': 'NO_ROUTE' },
    });
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'PENDING', attempts: 1 });
  });

  it('fails a publish to a missing exchange as REJECTED, then delivers on a new channel once it exists', async () => {
    await amqpPolicy({ url: rabbit.url, exchange: 'late', routingKey: 'k' });
    const event = await insertDeadLetter(t.db);
    const results: DeliveryResult[] = [];
    await runRetryPass(passDeps(t.db, { deliver: recordingDeliver(results) }));
    const queue = await rabbit.queueOn('late', 'k');
    await t.db.deadLetter.update({ where: { id: event.id }, data: { nextAttemptAt: new Date(0) } });

    await runRetryPass(passDeps(t.db, { deliver: recordingDeliver(results) }));

    expect(results).toEqual([expect.objectContaining({ outcome: 'FAILED', failureKind: 'REJECTED' }), expect.objectContaining({ ok: true })]);
    expect((await attemptsOf(t.db, event.id))[0]!.errorMessage).toMatch(/NOT_FOUND - no exchange 'late'/);
    expect((await rabbit.nextMessage(queue)).properties.messageId).toBe(event.id.toString());
  });

  it('fails as UNREACHABLE when no broker listens, keeping the event PENDING with backoff and the password out of the error', async () => {
    await amqpPolicy({ url: `amqp://guest:pa55-w0rd-xyz@127.0.0.1:1/${rabbit.name}`, exchange: 'orders' }, { maxAttempts: 5 });
    const event = await insertDeadLetter(t.db);
    const results: DeliveryResult[] = [];
    const before = Date.now();

    expect(await runRetryPass(passDeps(t.db, { deliver: recordingDeliver(results) }))).toMatchObject({ retried: 1 });

    expect(results).toEqual([expect.objectContaining({ outcome: 'FAILED', failureKind: 'UNREACHABLE' })]);
    const status = await statusOf(t.db, event.id);
    expect(status).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect(status.nextAttemptAt!.getTime()).toBeGreaterThan(before);
    const [attempt] = await attemptsOf(t.db, event.id);
    expect(attempt!.errorMessage).toMatch(/^cannot connect to 127\.0\.0\.1:1 vhost lazarus_t_\w+: .*ECONNREFUSED/);
    expect(attempt!.errorMessage).not.toContain('pa55-w0rd-xyz');
  });

  it('keeps a refused password out of the attempt, the health and every GraphQL answer', async () => {
    const password = 'not-the-guest-pw-42';
    await amqpPolicy({ url: `amqp://guest:${password}@127.0.0.1:5672/${rabbit.name}`, exchange: 'orders' }, { maxAttempts: 5 });
    const event = await insertDeadLetter(t.db);
    const results: DeliveryResult[] = [];

    await runRetryPass(passDeps(t.db, { deliver: recordingDeliver(results) }));

    expect(results).toEqual([expect.objectContaining({ outcome: 'FAILED', failureKind: 'UNREACHABLE' })]);
    expect((await attemptsOf(t.db, event.id))[0]!.errorMessage).toMatch(/ACCESS_REFUSED/);
    const answers = [
      await attemptsOf(t.db, event.id),
      (await execute(admin, '{ retryPolicies { eventType target { kind description settings secretsSet } } }')).body,
      (await execute(viewer, HEALTH)).body,
      (await execute(admin, `{ deadLetter(id: "${event.id}") { attempts { errorMessage } } }`)).body,
    ];
    expect(JSON.stringify(answers)).not.toContain(password);
    expect(answers[1]).toEqual({ data: { retryPolicies: [{ eventType: '*', target: null }, { eventType: 'order.placed', target: {
      kind: 'amqp', description: `amqp exchange orders on 127.0.0.1:5672 vhost ${rabbit.name}`,
      settings: { url: `amqp://127.0.0.1:5672/${rabbit.name}`, exchange: 'orders', routingKey: '', mandatory: false }, secretsSet: ['url'],
    } }] } });
  });
});

describe('the health of AMQP connections', () => {
  it('is CONNECTED after a delivery and DISCONNECTED after close, over GraphQL (to any viewer) and in /metrics', async () => {
    const vhost = await createVhost(); // a target name no other test's connection has
    try {
      await amqpPolicy({ url: vhost.url, routingKey: 'nobody-reads-this' });
      await insertDeadLetter(t.db);
      const metrics = createRetryMetrics(t.db);
      const target = `127.0.0.1:5672 vhost ${vhost.name}`;
      const healthOf = (body: unknown) => (body as { data: { retryTargetHealth: { target: string }[] } }).data.retryTargetHealth.filter((h) => h.target === target);

      await runRetryPass(passDeps(t.db, { deliver: createTargetDeliver(TARGET_KINDS) }));

      expect(healthOf((await execute(viewer, HEALTH)).body)).toEqual([{ kind: 'amqp', target, state: 'CONNECTED', lastError: null, lastErrorAt: null }]);
      expect(await metrics.registry.metrics()).toContain(`lazarus_target_connected{kind="amqp",target="${target}"} 1`);

      await closeTargetKinds(TARGET_KINDS);

      expect(healthOf((await execute(viewer, HEALTH)).body)).toEqual([{ kind: 'amqp', target, state: 'DISCONNECTED', lastError: null, lastErrorAt: null }]);
      expect(await metrics.registry.metrics()).toContain(`lazarus_target_connected{kind="amqp",target="${target}"} 0`);
      expect(JSON.stringify(targetHealth(TARGET_KINDS))).not.toContain('guest');
    } finally {
      await closeTargetKinds(TARGET_KINDS);
      await vhost.drop();
    }
  });

  it('reports a broker that refuses the login as DISCONNECTED with its error, credentials left out', async () => {
    await amqpPolicy({ url: `amqp://lazarus-user:wrong-pw@127.0.0.1:5672/${rabbit.name}` });
    await insertDeadLetter(t.db);

    await runRetryPass(passDeps(t.db, { deliver: createTargetDeliver(TARGET_KINDS) }));

    const rows = targetHealth(TARGET_KINDS).filter((h) => h.target === `127.0.0.1:5672 vhost ${rabbit.name}`);
    expect(rows).toEqual([expect.objectContaining({ kind: 'amqp', state: 'DISCONNECTED', lastError: expect.stringMatching(/ACCESS_REFUSED/), lastErrorAt: expect.any(Date) })]);
    expect(JSON.stringify(targetHealth(TARGET_KINDS))).not.toMatch(/lazarus-user|wrong-pw/);
  });
});

describe('saving an amqp target', () => {
  it('is listed among the kinds, its URL a required secret', async () => {
    const { body } = await execute(admin, '{ retryTargetKinds { kind label fields { name isSecret isRequired } } }');

    expect((body.data as { retryTargetKinds: unknown[] }).retryTargetKinds).toContainEqual({
      kind: 'amqp', label: 'RabbitMQ (AMQP 0-9-1)',
      fields: [
        { name: 'url', isSecret: true, isRequired: true },
        { name: 'exchange', isSecret: false, isRequired: false },
        { name: 'routingKey', isSecret: false, isRequired: false },
        { name: 'mandatory', isSecret: false, isRequired: false },
      ],
    });
  });

  it('describes it by exchange, host and vhost, and answers without the URL’s credentials', async () => {
    const { body } = await execute(admin, UPSERT, {
      input: { eventType: 'order.placed', target: { kind: 'amqp', settings: { url: 'amqps://lazarus:t0p-s3cret@rabbit.example.com/%2Fprod', exchange: 'orders', routingKey: 'order.placed' } } },
    });

    expect(body).toEqual({ data: { upsertRetryPolicy: { eventType: 'order.placed', target: {
      kind: 'amqp', description: 'amqp exchange orders key order.placed on rabbit.example.com vhost /prod',
      settings: { url: 'amqps://rabbit.example.com/%2Fprod', exchange: 'orders', routingKey: 'order.placed', mandatory: false }, secretsSet: ['url'],
    } } } });
  });

  it.each([
    [{ url: 'http://rabbit.example.com/' }, 'target.settings.url', 'INVALID_URL'],
    [{ url: 'amqp://' }, 'target.settings.url', 'INVALID_URL'],
    [{ exchange: 'orders' }, 'target.settings.url', 'INVALID_URL'],
    [{ url: 'amqp://guest:guest@10.0.0.5/' }, 'target.settings.url', 'PRIVATE_TARGET'],
    [{ url: 'amqp://guest:guest@localhost/' }, 'target.settings.url', 'PRIVATE_TARGET'],
    [{ url: 'amqp://rabbit.example.com/', mandatory: 'sometimes' }, 'target.settings.mandatory', 'INVALID_SETTING'],
    [{ url: 'amqp://rabbit.example.com/', priority: 9 }, 'target.settings.priority', 'INVALID_SETTING'],
  ])('refuses %j with a coded BAD_USER_INPUT naming %s, and writes nothing', async (settings, field, reason) => {
    const before = await t.db.$queryRaw`select * from retry_policies order by event_type`;

    const { body } = await execute(admin, UPSERT, { input: { eventType: 'order.placed', target: { kind: 'amqp', settings } } });

    expect(body.data).toBeNull();
    expect(body.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_USER_INPUT', field, reason }) })]);
    expect(JSON.stringify(body)).not.toContain('guest:guest');
    expect(await t.db.$queryRaw`select * from retry_policies order by event_type`).toEqual(before);
  });
});
