import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { attemptsOf, passDeps, setPolicy, statusOf } from './helpers/retry.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();
let sink: Sink;

beforeAll(async () => {
  sink = await startSink();
});
afterAll(() => sink.close());
beforeEach(async () => {
  sink.requests = [];
  await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true, maxAttempts: 3 });
});

describe('webhook delivery against a misbehaving target', () => {
  it('follows a redirect by hand and delivers to the new location', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (req, res) => {
      if (sink.requests.length === 1) res.writeHead(302, { location: '/moved' }).end();
      else res.writeHead(200).end('moved ok');
    };

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ succeeded: 1 });
    expect(sink.requests).toHaveLength(2);
    expect(sink.requests[1]!.headers['webhook-id']).toBe(event.id.toString());
  });

  it('treats a redirect to a non-http(s) URL as permanent', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.writeHead(302, { location: 'file:///etc/passwd' }).end();

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ exhausted: 1 });
    expect((await attemptsOf(t.db, event.id))[0]).toMatchObject({ outcome: 'PERMANENT_FAILURE', statusCode: 302 });
  });

  it('retries after a connection reset', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.socket?.destroy();

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ retried: 1 });
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect((await attemptsOf(t.db, event.id))[0]).toMatchObject({ outcome: 'FAILED', statusCode: null });
  });

  it('records at most 2 KB of a garbage response, NUL bytes dropped', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.writeHead(500).end(Buffer.concat([Buffer.from([0, 0xff, 0xfe]), Buffer.alloc(10_000, 'g')]));

    await runRetryPass(passDeps(t.db));

    const [attempt] = await t.db.deliveryAttempt.findMany({ where: { deadLetterId: event.id } });
    expect(attempt!.statusCode).toBe(500);
    expect(Buffer.byteLength(attempt!.responseBody!)).toBeLessThanOrEqual(2048);
    expect(attempt!.responseBody!.includes('\u0000')).toBe(false);
  });
});

describe('the webhook body', () => {
  it('carries the payload as stored: a number JavaScript cannot carry goes out exactly', async () => {
    sink.respond = (_req, res) => res.writeHead(204).end();
    const payload = '{"id": 12345678901234567890, "lines": [{"amount": 0.1000000000000000055511151231257827}]}';
    const [{ id }] = await t.db.$queryRaw<[{ id: bigint }]>`insert into dead_letters (event_type, payload) values ('order.placed', ${payload}::jsonb) returning id`;

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ succeeded: 1 });

    const { body, json } = sink.requests[0]!;
    expect(json).toMatchObject({ id: id.toString(), type: 'order.placed', attempt: 1 });
    expect(body.endsWith(`,"payload":${payload}}`)).toBe(true);
  });
});

describe('webhook-id', () => {
  it('stays the same across retries, and is new for each requeue after a success', async () => {
    const event = await insertDeadLetter(t.db);
    let answer = 500;
    sink.respond = (_req, res) => res.writeHead(answer).end();
    await runRetryPass(passDeps(t.db)); // fails, retried
    answer = 200;
    await t.db.deadLetter.update({ where: { id: event.id }, data: { nextAttemptAt: new Date(0) } });
    await runRetryPass(passDeps(t.db)); // succeeds
    const requeue = 'mutation ($ids: [ID!]) { requeueDeadLetters(input: { ids: $ids, force: true }) { __typename } }';
    for (let generation = 1; generation <= 2; generation++) {
      await execute(testServer(t.db), requeue, { ids: [event.id.toString()] });
      await runRetryPass(passDeps(t.db));
    }

    const id = event.id.toString();
    expect(sink.requests.map((r) => r.headers['webhook-id'])).toEqual([id, id, `${id}.1`, `${id}.2`]);
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'SUCCEEDED' });
  });
});
