// The `redis` target kind against the local Redis (127.0.0.1:6379), a stream key of each test's own:
// XADD through the retry loop with the delivery id as a field, MAXLEN ~, the failure kinds,
// connection health, and no credential in any answer.
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { claimDueDeadLetters } from '../src/db/sql/claimDueDeadLetters.ts';
import { REDACTED } from '../src/domain/attemptDetails.ts';
import type { Deliver, DeliveryResult } from '../src/workers/retry/delivery.ts';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { createRedisConnections, type RedisConnections } from '../src/workers/brokers/redisConnections.ts';
import { createRedisTarget } from '../src/workers/targets/redis.ts';
import { createTargetDeliver, kindMap, type TargetKind } from '../src/workers/targets/targetKind.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { freePort } from './helpers/natsServer.ts';
import { attemptDetailsOf, attemptsOf, passDeps, statusOf } from './helpers/retry.ts';

const REDIS_URL = 'redis://127.0.0.1:6379';
const t = useTestDatabase();
let redis: Redis;
let connections: RedisConnections;
let kind: TargetKind;
let results: DeliveryResult[];
let key: string;

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
});
afterAll(async () => {
  await redis?.quit();
});
beforeEach(() => {
  key = `lazarus-test:${randomUUID()}`;
  connections = createRedisConnections({ reconnectBaseMs: 20, reconnectMaxMs: 200 });
  kind = createRedisTarget({ connections });
  results = [];
});
afterEach(async () => {
  await kind.close!();
  await redis.del(key);
});

const UPSERT = `mutation ($input: UpsertRetryPolicyInput!) {
  upsertRetryPolicy(input: $input) { eventType target { kind description settings secretsSet } }
}`;
const admin = () => testServer(t.db, { authenticate: () => ({ name: 'admin-alice', role: 'admin' }) });

async function saveTarget(settings: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const { body } = await execute(admin(), UPSERT, {
    input: { eventType: 'order.placed', allowPrivateTarget: true, maxAttempts: 5, ...extra, target: { kind: 'redis', settings } },
  });
  expect(body.errors).toBeUndefined();
  return body;
}

function recordingDeliver(): Deliver {
  const deliver = createTargetDeliver(kindMap([kind]));
  return async (event, policy, signal) => {
    const result = await deliver(event, policy, signal);
    results.push(result);
    return result;
  };
}

const pass = () => runRetryPass(passDeps(t.db, { deliver: recordingDeliver() }));

async function entries() {
  const rows = await redis.xrange(key, '-', '+');
  return rows.map(([, fields]) => Object.fromEntries(Array.from({ length: fields.length / 2 }, (_, i) => [fields[2 * i], fields[2 * i + 1]])));
}

describe('delivering to a Redis stream', () => {
  it('adds an entry with the delivery id, the payload, the Lazarus id, the attempt and the source coordinates', async () => {
    await saveTarget({ url: REDIS_URL, stream: key });
    const event = await insertDeadLetter(t.db, { payload: { orderId: 7 }, queue: 'orders', source: 'checkout', headers: { traceparent: '00-abc' } });

    expect(await pass()).toMatchObject({ claimed: 1, succeeded: 1 });

    const id = event.id.toString();
    expect(await entries()).toEqual([{
      id, payload: '{"orderId": 7}', 'lazarus-id': id, attempt: '1', 'event-type': 'order.placed',
      queue: 'orders', source: 'checkout', headers: '{"traceparent":"00-abc"}',
    }]);
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  });

  it('sends the payload as stored: a number JavaScript cannot carry goes out exactly', async () => {
    await saveTarget({ url: REDIS_URL, stream: key });
    const text = '{"id": 12345678901234567890, "amount": 0.1000000000000000055511151231257827}';
    const [{ id }] = await t.db.$queryRaw<[{ id: bigint }]>`insert into dead_letters (event_type, payload) values ('order.placed', ${text}::jsonb) returning id`;

    expect(await pass()).toMatchObject({ claimed: 1, succeeded: 1 });

    expect((await entries()).map((e) => [e['lazarus-id'], e.payload])).toEqual([[id.toString(), text]]);
  });

  it('records on the attempt the target, the fields it sent (the event’s headers one by one, a secret redacted), the payload size and the entry id', async () => {
    await saveTarget({ url: REDIS_URL, stream: key, maxLen: 1000 });
    const event = await insertDeadLetter(t.db, { payload: { orderId: 7 }, queue: 'orders', source: 'checkout', headers: { traceparent: '00-abc', authorization: 'Bearer s3cr3t' } });

    await pass();

    const id = event.id.toString();
    const [entryId] = (await redis.xrange(key, '-', '+'))[0]!;
    const [attempt] = await attemptDetailsOf(t.db, event.id);
    expect(attempt).toEqual({
      target: `redis stream ${key} on 127.0.0.1`,
      requestHeaders: {
        maxlen: '~ 1000', id, 'lazarus-id': id, attempt: '1', 'event-type': 'order.placed', queue: 'orders', source: 'checkout',
        'headers.traceparent': '00-abc', 'headers.authorization': REDACTED,
      },
      requestBodyBytes: Buffer.byteLength('{"orderId": 7}'),
      requestBodySha256: createHash('sha256').update('{"orderId": 7}').digest('hex'),
      responseHeaders: { 'entry-id': entryId },
      responseBody: `entry ${entryId}`,
    });
    expect(JSON.stringify(attempt)).not.toContain('s3cr3t');
  });

  it('gives a requeue after SUCCEEDED the id <id>.1', async () => {
    await saveTarget({ url: REDIS_URL, stream: key });
    const event = await insertDeadLetter(t.db);
    await pass();

    await execute(testServer(t.db), 'mutation ($ids: [ID!]) { requeueDeadLetters(input: { ids: $ids, force: true }) { __typename } }', { ids: [event.id.toString()] });
    expect(await pass()).toMatchObject({ succeeded: 1 });

    expect((await entries()).map((e) => e.id)).toEqual([`${event.id}`, `${event.id}.1`]);
  });

  it('trims the stream with MAXLEN ~ when maxLen is set', async () => {
    await saveTarget({ url: REDIS_URL, stream: key, maxLen: 1 });
    // A stream node holds up to 100 entries; ~ trims whole nodes only, so fill past one first.
    await redis.xadd(key, '*', 'filler', '1');
    for (let i = 0; i < 150; i++) await redis.xadd(key, '*', 'filler', String(i));
    await insertDeadLetter(t.db);

    await pass();

    expect(await redis.xlen(key)).toBeLessThan(151);
    expect((await entries()).at(-1)).toMatchObject({ 'event-type': 'order.placed' });
  });
});

describe('a delivery that fails', () => {
  it('is REJECTED when the key holds another type (WRONGTYPE), and retried later', async () => {
    await redis.set(key, 'not a stream');
    await saveTarget({ url: REDIS_URL, stream: key });
    const event = await insertDeadLetter(t.db);

    expect(await pass()).toMatchObject({ retried: 1 });

    expect(results).toEqual([expect.objectContaining({ outcome: 'FAILED', failureKind: 'REJECTED' })]);
    expect((await attemptsOf(t.db, event.id))[0]!.errorMessage).toMatch(/^Redis refused the XADD: WRONGTYPE/);
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'PENDING', attempts: 1, nextAttemptAt: expect.any(Date) });
  });

  it('is UNREACHABLE when no server listens, keeps the event PENDING with a next attempt, and never shows the password', async () => {
    const port = await freePort();
    await saveTarget({ url: `redis://lazarus-user:pa55-w0rd-xyz@127.0.0.1:${port}`, stream: key });
    const event = await insertDeadLetter(t.db);

    expect(await pass()).toMatchObject({ retried: 1 });

    expect(results).toEqual([expect.objectContaining({ ok: false, outcome: 'FAILED', failureKind: 'UNREACHABLE' })]);
    const [attempt] = await attemptsOf(t.db, event.id);
    expect(attempt!.errorMessage).toMatch(new RegExp(`^not connected to Redis at 127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
    expect(attempt!.errorMessage).not.toMatch(/pa55-w0rd-xyz|lazarus-user/);
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'PENDING', attempts: 1, nextAttemptAt: expect.any(Date) });
    expect(kind.health!()).toEqual([expect.objectContaining({ target: `redis on 127.0.0.1:${port}`, state: 'DISCONNECTED', lastError: expect.stringContaining('ECONNREFUSED') })]);
  });
});

describe('the delivery’s signal', () => {
  it('ends a delivery as TIMED_OUT when its signal has aborted', async () => {
    await saveTarget({ url: REDIS_URL, stream: key });
    await insertDeadLetter(t.db);
    const policy = await t.db.retryPolicy.findUniqueOrThrow({ where: { eventType: 'order.placed' } });
    const [event] = await claimDueDeadLetters(t.db, { limit: 1, workerId: 'w', leaseSeconds: 30, inProcessEventTypes: [] });

    const result = await createTargetDeliver(kindMap([kind]))(event!, policy, AbortSignal.abort());

    expect(result).toMatchObject({ ok: false, outcome: 'TIMED_OUT', failureKind: 'TIMEOUT' });
    expect(await redis.exists(key)).toBe(0);
  });
});

describe('connection health', () => {
  it('is CONNECTED after a delivery, and DISCONNECTED after close; the next delivery connects again', async () => {
    await saveTarget({ url: REDIS_URL, stream: key });
    await insertDeadLetter(t.db);
    await pass();

    expect(kind.health!()).toEqual([{ kind: 'redis', target: 'redis on 127.0.0.1', state: 'CONNECTED', lastError: null, lastErrorAt: null }]);
    await kind.close!();
    expect(kind.health!()).toEqual([expect.objectContaining({ state: 'DISCONNECTED' })]);

    await insertDeadLetter(t.db);
    expect(await pass()).toMatchObject({ succeeded: 1 });
    expect(kind.health!()).toEqual([expect.objectContaining({ state: 'CONNECTED' })]);
    expect(await redis.xlen(key)).toBe(2);
  });

  it('goes DISCONNECTED when the server drops the connection, and CONNECTED again by itself', async () => {
    await saveTarget({ url: REDIS_URL, stream: key });
    await insertDeadLetter(t.db);
    await pass();
    const connection = connections.get(REDIS_URL);
    const client = await connection.client();
    const clientId = await client.client('ID');

    const down = connection.whenState('DISCONNECTED');
    await redis.client('KILL', 'ID', String(clientId));
    await down;
    await connection.whenState('CONNECTED');

    await insertDeadLetter(t.db);
    expect(await pass()).toMatchObject({ succeeded: 1 });
  });
});

describe('saving a redis target', () => {
  it('is listed in retryTargetKinds with its settings, the URL a secret', async () => {
    const { body } = await execute(admin(), '{ retryTargetKinds { kind label fields { name isSecret isRequired } } }');

    expect((body.data as { retryTargetKinds: { kind: string }[] }).retryTargetKinds.find((k) => k.kind === 'redis')).toEqual({
      kind: 'redis', label: 'Redis stream',
      fields: [
        { name: 'url', isSecret: true, isRequired: true },
        { name: 'stream', isSecret: false, isRequired: true },
        { name: 'maxLen', isSecret: false, isRequired: false },
      ],
    });
  });

  it('answers with the stream and host only: no user or password', async () => {
    // maxLen as the console's form sends it: text.
    const body = await saveTarget({ url: 'rediss://alice:s3cret-pass@cache.example.com:6380/2', stream: 'orders', maxLen: '1000' }, { allowPrivateTarget: false });

    expect(body.data).toEqual({
      upsertRetryPolicy: {
        eventType: 'order.placed',
        target: { kind: 'redis', description: 'redis stream orders on cache.example.com:6380', settings: { stream: 'orders', maxLen: 1000 }, secretsSet: ['url'] },
      },
    });
    expect(JSON.stringify(body)).not.toMatch(/s3cret|alice/);
  });

  it.each([
    [{ url: 'http://cache.example.com', stream: 'a' }, 'target.settings.url', 'INVALID_URL'],
    [{ url: 'redis://cache.example.com/x/y', stream: 'a' }, 'target.settings.url', 'INVALID_URL'],
    [{ url: 'redis://192.168.1.5:6379', stream: 'a' }, 'target.settings.url', 'PRIVATE_TARGET'],
    [{ url: 'redis://localhost', stream: 'a' }, 'target.settings.url', 'PRIVATE_TARGET'],
    [{ url: 'redis://cache.example.com', stream: '' }, 'target.settings.stream', 'INVALID_SETTING'],
    [{ url: 'redis://cache.example.com' }, 'target.settings.stream', 'INVALID_SETTING'],
    [{ url: 'redis://cache.example.com', stream: 'a', maxLen: 0 }, 'target.settings.maxLen', 'INVALID_SETTING'],
    [{ url: 'redis://cache.example.com', stream: 'a', maxLen: 1.5 }, 'target.settings.maxLen', 'INVALID_SETTING'],
    [{ url: 'redis://cache.example.com', stream: 'a', maxLen: 'lots' }, 'target.settings.maxLen', 'INVALID_SETTING'],
    [{ url: 'redis://cache.example.com', stream: 'a', group: 'g' }, 'target.settings.group', 'INVALID_SETTING'],
  ])('refuses %j with BAD_USER_INPUT on %s (%s), and writes nothing', async (settings, field, reason) => {
    const before = await t.db.$queryRaw`select * from retry_policies order by event_type`;

    const { body } = await execute(admin(), UPSERT, { input: { eventType: 'order.placed', target: { kind: 'redis', settings } } });

    expect(body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field, reason });
    expect(await t.db.$queryRaw`select * from retry_policies order by event_type`).toEqual(before);
  });
});
