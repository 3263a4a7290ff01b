import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { attemptsOf, passDeps, setPolicy, statusOf } from './helpers/retry.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();
let sink: Sink;

beforeAll(async () => {
  sink = await startSink();
});
afterAll(() => sink.close());
beforeEach(async () => {
  sink.requests = [];
  sink.respond = (_req, res) => res.writeHead(200).end('ok');
  await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true, signingSecret: 'whsec_c2VjcmV0', baseDelayMs: 1000, maxAttempts: 3 });
});

describe('runRetryPass with a webhook target', () => {
  it('delivers a signed POST, marks the event SUCCEEDED and records the attempt', async () => {
    const event = await insertDeadLetter(t.db, { payload: { orderId: 42 } });

    const summary = await runRetryPass(passDeps(t.db));

    expect(summary).toMatchObject({ claimed: 1, succeeded: 1, retried: 0, exhausted: 0, leaseLost: 0 });
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1, leaseToken: null });
    expect(await attemptsOf(t.db, event.id)).toEqual([
      { attemptNumber: 1, outcome: 'SUCCEEDED', statusCode: 200, workerId: 'worker-a', errorMessage: null },
    ]);
    const [request] = sink.requests;
    const id = event.id.toString();
    expect(request!.headers['webhook-id']).toBe(id);
    expect(request!.json).toMatchObject({ id, type: 'order.placed', attempt: 1, payload: { orderId: 42 } });
    const expected = createHmac('sha256', Buffer.from('secret'))
      .update(`${id}.${request!.headers['webhook-timestamp']}.${request!.body}`).digest('base64');
    expect(request!.headers['webhook-signature']).toBe(`v1,${expected}`);
  });

  it('puts a retryable failure back to PENDING after the jittered backoff, with the same webhook-id next time', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.writeHead(500).end('boom');

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ claimed: 1, retried: 1 });

    const row = await statusOf(t.db, event.id);
    expect(row).toMatchObject({ status: 'PENDING', attempts: 1 });
    // random 0.5 over [0, 1000] → 500 ms after the write's now() (updated_at is that now()).
    expect(row.nextAttemptAt!.getTime() - row.updatedAt.getTime()).toBe(500);
    expect(await attemptsOf(t.db, event.id)).toEqual([
      { attemptNumber: 1, outcome: 'FAILED', statusCode: 500, workerId: 'worker-a', errorMessage: 'HTTP 500' },
    ]);

    await t.db.deadLetter.update({ where: { id: event.id }, data: { nextAttemptAt: new Date(0) } });
    sink.respond = (_req, res) => res.writeHead(204).end();
    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(sink.requests.map((r) => r.headers['webhook-id'])).toEqual([event.id.toString(), event.id.toString()]);
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
  });

  it('ends a permanent 4xx EXHAUSTED at once', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.writeHead(422).end('{"error":"bad order"}');

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ claimed: 1, exhausted: 1 });

    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'EXHAUSTED', attempts: 1, nextAttemptAt: null });
    const [attempt] = await t.db.deliveryAttempt.findMany({ where: { deadLetterId: event.id } });
    expect(attempt).toMatchObject({ outcome: 'PERMANENT_FAILURE', statusCode: 422, responseBody: '{"error":"bad order"}' });
  });

  it('honours Retry-After on 429 instead of the backoff', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.writeHead(429, { 'retry-after': '7' }).end();

    await runRetryPass(passDeps(t.db));

    const row = await statusOf(t.db, event.id);
    expect(row.status).toBe('PENDING');
    expect(row.nextAttemptAt!.getTime() - row.updatedAt.getTime()).toBe(7000);
  });

  it('ends EXHAUSTED at max attempts, the event override winning over the policy', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true, baseDelayMs: 0, maxDelayMs: 0, maxAttempts: 5 });
    const event = await insertDeadLetter(t.db, { maxAttempts: 2 });
    sink.respond = (_req, res) => res.writeHead(503).end();

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ retried: 1 });
    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ exhausted: 1 });
    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ claimed: 0 });

    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'EXHAUSTED', attempts: 2 });
    expect((await attemptsOf(t.db, event.id)).map((a) => a.outcome)).toEqual(['FAILED', 'FAILED']);
  });

  it('times out a hanging target and retries later', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true, timeoutMs: 150 });
    const event = await insertDeadLetter(t.db);
    sink.respond = () => {};

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ retried: 1 });
    expect((await attemptsOf(t.db, event.id))[0]).toMatchObject({ outcome: 'TIMED_OUT', errorMessage: 'no response within 150 ms' });
  });

  it('ends a delivery that ignores its signal at the timeout, having aborted the signal with a TimeoutError', async () => {
    await setPolicy(t.db, 'invoice.sent', { timeoutMs: 100 });
    const event = await insertDeadLetter(t.db, { eventType: 'invoice.sent' });
    let reason: unknown;

    const summary = await runRetryPass(passDeps(t.db, {
      inProcessEventTypes: ['invoice.sent'],
      deliver: (_e, _policy, signal) => {
        signal.addEventListener('abort', () => (reason = signal.reason));
        return new Promise(() => {}); // never settles
      },
    }));

    expect(summary).toMatchObject({ claimed: 1, retried: 1 });
    expect((reason as DOMException).name).toBe('TimeoutError');
    expect((await attemptsOf(t.db, event.id))[0]).toMatchObject({ outcome: 'TIMED_OUT', errorMessage: 'no response within 100 ms' });
  });

  it('refuses a private target unless the policy allows it, as a permanent failure with no request sent', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: false });
    const event = await insertDeadLetter(t.db);

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ exhausted: 1 });

    expect(sink.requests).toEqual([]);
    expect((await attemptsOf(t.db, event.id))[0]).toMatchObject({ outcome: 'PERMANENT_FAILURE' });
  });

  it('holds events of a type without a target, and of a paused type, PENDING with no attempt charged', async () => {
    const held = await insertDeadLetter(t.db, { eventType: 'invoice.sent' });
    await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true, paused: true });
    const paused = await insertDeadLetter(t.db);

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ claimed: 0 });

    expect(await statusOf(t.db, held.id)).toMatchObject({ status: 'PENDING', attempts: 0 });
    expect(await statusOf(t.db, paused.id)).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it('delivers through an in-process handler when one is registered, even without a target', async () => {
    const event = await insertDeadLetter(t.db, { eventType: 'invoice.sent' });
    const seen: bigint[] = [];

    const summary = await runRetryPass(passDeps(t.db, {
      inProcessEventTypes: ['invoice.sent'],
      deliver: async (e) => {
        seen.push(e.id);
        return { ok: true, statusCode: null, responseBody: null };
      },
    }));

    expect(summary).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(seen).toEqual([event.id]);
  });
});
