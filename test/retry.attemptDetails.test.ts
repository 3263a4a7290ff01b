import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Prisma } from '../src/generated/prisma/client.ts';
import { boundHeaders, cutText, MAX_RESPONSE_HEADERS_BYTES, REDACTED } from '../src/domain/attemptDetails.ts';
import { createDeliver, PermanentDeliveryError } from '../src/workers/retry/delivery.ts';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { createWebhookDeliver } from '../src/workers/targets/webhook.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { passDeps, setPolicy, statusOf } from './helpers/retry.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();
let sink: Sink;
let answerOk: Sink['respond'];

beforeAll(async () => {
  sink = await startSink();
  answerOk = sink.respond;
});
afterAll(() => sink.close());
beforeEach(async () => {
  sink.requests = [];
  sink.hold(false);
  sink.respond = answerOk;
  await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, signingSecret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=', allowPrivateTarget: true, maxAttempts: 3 });
});

async function onlyAttempt(id: bigint) {
  const attempts = await t.db.deliveryAttempt.findMany({ where: { deadLetterId: id }, orderBy: { id: 'asc' } });
  expect(attempts).toHaveLength(1);
  return attempts[0]!;
}

/** A port on this host that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

describe('an attempt records what was sent', () => {
  it('keeps the target host, the request headers with the signature redacted, and the body size and SHA-256', async () => {
    const event = await insertDeadLetter(t.db);

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ succeeded: 1 });

    const sent = sink.requests[0]!;
    expect(sent.headers['webhook-signature']).toMatch(/^v1,/);
    const attempt = await onlyAttempt(event.id);
    expect(attempt).toMatchObject({
      outcome: 'SUCCEEDED', statusCode: 200, responseBody: 'ok', responseBodyTruncated: false,
      failureKind: null, permanentReason: null,
      target: `webhook to ${new URL(sink.url).host}`,
      requestBodyBytes: Buffer.byteLength(sent.body),
      requestBodySha256: createHash('sha256').update(sent.body).digest('hex'),
    });
    expect(attempt.requestHeaders).toEqual({
      'content-type': 'application/json', 'user-agent': 'lazarus-dlq', 'webhook-id': event.id.toString(),
      'webhook-timestamp': sent.headers['webhook-timestamp'], 'webhook-signature': REDACTED,
    });
    expect(jsonText(attempt)).not.toContain(sent.headers['webhook-signature'] as string);
  });

  it('never keeps the URL’s path or query, where a token may live', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: `${sink.url}/T0KEN-in-path?key=s3cret`, allowPrivateTarget: true });
    const event = await insertDeadLetter(t.db);

    await runRetryPass(passDeps(t.db));

    const attempt = await onlyAttempt(event.id);
    expect(attempt.target).toBe(`webhook to ${new URL(sink.url).host}`);
    expect(jsonText(attempt)).not.toMatch(/T0KEN|s3cret/);
  });
});

describe('an attempt records what came back', () => {
  it('keeps the response status, headers (cookies redacted) and body', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.writeHead(503, { 'x-request-id': 'req-77', 'set-cookie': 'session=abc123', 'retry-after': '5' }).end('{"error":"inventory down"}');

    await runRetryPass(passDeps(t.db));

    const attempt = await onlyAttempt(event.id);
    expect(attempt).toMatchObject({
      outcome: 'FAILED', statusCode: 503, responseBody: '{"error":"inventory down"}', responseBodyTruncated: false,
      failureKind: 'REJECTED', permanentReason: null,
    });
    expect(attempt.responseHeaders).toMatchObject({ 'x-request-id': 'req-77', 'set-cookie': REDACTED, 'retry-after': '5' });
    expect(JSON.stringify(attempt.responseHeaders)).not.toContain('abc123');
  });

  it('stores a 1 MB response body at its 2 KB cap and says it was truncated', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.writeHead(500).end(Buffer.alloc(1024 * 1024, 'x'));

    await runRetryPass(passDeps(t.db));

    const attempt = await onlyAttempt(event.id);
    expect(attempt.responseBody).toBe('x'.repeat(2048));
    expect(attempt.responseBodyTruncated).toBe(true);
  });

  it('keeps at most 2 KB of response headers, cutting long values and counting the headers left out', async () => {
    const event = await insertDeadLetter(t.db);
    const many = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`x-h${String(i).padStart(2, '0')}`, 'v'.repeat(600)]));
    sink.respond = (_req, res) => res.writeHead(500, many).end();

    await runRetryPass(passDeps(t.db));

    const [row] = await t.db.$queryRaw<{ size: number; headers: Record<string, string> }[]>`
      select octet_length(response_headers::text)::int as size, response_headers as headers from delivery_attempts where dead_letter_id = ${event.id}`;
    expect(row!.size).toBeLessThanOrEqual(MAX_RESPONSE_HEADERS_BYTES);
    expect(row!.headers['x-h00']).toBe(`${'v'.repeat(509)}…`);
    expect(row!.headers['…']).toMatch(/^\d+ more not kept$/);
  });
});

describe('an attempt says why it failed, and why it was the last', () => {
  it('UNREACHABLE for a port nothing listens on, retried, with the request it tried to send', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: `http://127.0.0.1:${await closedPort()}/hook`, allowPrivateTarget: true });
    const event = await insertDeadLetter(t.db);

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ retried: 1 });

    const attempt = await onlyAttempt(event.id);
    expect(attempt).toMatchObject({ outcome: 'FAILED', failureKind: 'UNREACHABLE', permanentReason: null, statusCode: null, responseHeaders: null });
    expect(attempt.requestHeaders).toMatchObject({ 'webhook-id': event.id.toString() });
  });

  it('REJECTED and PERMANENT_STATUS_CODE for a 4xx in the policy’s permanent status codes', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.writeHead(422, { 'content-type': 'application/json' }).end('{"error":"sku missing"}');

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ exhausted: 1 });

    expect(await onlyAttempt(event.id)).toMatchObject({
      outcome: 'PERMANENT_FAILURE', statusCode: 422, failureKind: 'REJECTED', permanentReason: 'PERMANENT_STATUS_CODE',
      responseBody: '{"error":"sku missing"}', responseHeaders: expect.objectContaining({ 'content-type': 'application/json' }),
    });
  });

  it('TIMEOUT for a receiver that does not answer in time, with the request it sent', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true, timeoutMs: 300 });
    const event = await insertDeadLetter(t.db);
    sink.hold();

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ retried: 1 });
    sink.release();

    const attempt = await onlyAttempt(event.id);
    expect(attempt).toMatchObject({ outcome: 'TIMED_OUT', failureKind: 'TIMEOUT', permanentReason: null, statusCode: null });
    expect(attempt.requestHeaders).toMatchObject({ 'webhook-id': event.id.toString() });
  });

  it('MAX_ATTEMPTS on the attempt that used the last one, and nothing on those retried before it', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true, maxAttempts: 2, baseDelayMs: 0, maxDelayMs: 0 });
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.writeHead(500).end('boom');

    await runRetryPass(passDeps(t.db));
    await t.db.deadLetter.update({ where: { id: event.id }, data: { nextAttemptAt: new Date(0) } });
    await runRetryPass(passDeps(t.db));

    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'EXHAUSTED', attempts: 2 });
    const attempts = await t.db.deliveryAttempt.findMany({ where: { deadLetterId: event.id }, orderBy: { attemptNumber: 'asc' } });
    expect(attempts.map((a) => [a.outcome, a.failureKind, a.permanentReason])).toEqual([
      ['FAILED', 'REJECTED', null],
      ['FAILED', 'REJECTED', 'MAX_ATTEMPTS'],
    ]);
  });

  it('INVALID_TARGET for a private address the policy does not allow', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: false });
    const event = await insertDeadLetter(t.db);

    expect(await runRetryPass(passDeps(t.db))).toMatchObject({ exhausted: 1 });

    expect(await onlyAttempt(event.id)).toMatchObject({ outcome: 'PERMANENT_FAILURE', failureKind: 'INVALID_TARGET', permanentReason: 'INVALID_TARGET' });
    expect(sink.requests).toHaveLength(0);
  });

  it('PERMANENT_ERROR and PERMANENT_ERROR_KIND for an in-process handler’s permanent throws', async () => {
    await setPolicy(t.db, 'order.placed', { permanentErrorKinds: ['VALIDATION'] });
    const refused = await insertDeadLetter(t.db, { payload: { refuse: 'error' } });
    const invalid = await insertDeadLetter(t.db, { payload: { refuse: 'kind' } });
    const handler = async (event: { payload: unknown }) => {
      if ((event.payload as { refuse: string }).refuse === 'error') throw new PermanentDeliveryError('not for us');
      throw Object.assign(new Error('field sku is required'), { kind: 'VALIDATION' });
    };
    const deliver = createDeliver(new Map([['order.placed', handler]]), createWebhookDeliver());

    expect(await runRetryPass(passDeps(t.db, { deliver, inProcessEventTypes: ['order.placed'] }))).toMatchObject({ exhausted: 2 });

    expect(await onlyAttempt(refused.id)).toMatchObject({ outcome: 'PERMANENT_FAILURE', permanentReason: 'PERMANENT_ERROR', errorMessage: 'not for us', target: null });
    expect(await onlyAttempt(invalid.id)).toMatchObject({ outcome: 'PERMANENT_FAILURE', permanentReason: 'PERMANENT_ERROR_KIND' });
  });
});

describe('GraphQL', () => {
  it('returns an attempt’s request, response, failure kind and permanent reason', async () => {
    const event = await insertDeadLetter(t.db);
    sink.respond = (_req, res) => res.writeHead(404, { 'x-trace': 't-1' }).end('no such hook');
    await runRetryPass(passDeps(t.db));

    const { body } = await execute(testServer(t.db), `query ($id: ID!) { deadLetter(id: $id) { timeline { attempt {
      outcome statusCode failureKind permanentReason target requestBodyBytes requestBodySha256
      requestHeaders { name value } responseHeaders { name value } responseBody responseBodyTruncated } } } }`, { id: event.id.toString() });

    expect(body.errors).toBeUndefined();
    const attempt = (body.data as { deadLetter: { timeline: { attempt: Record<string, unknown> }[] } }).deadLetter.timeline.find((e) => e.attempt)!.attempt;
    expect(attempt).toMatchObject({
      outcome: 'PERMANENT_FAILURE', statusCode: 404, failureKind: 'REJECTED', permanentReason: 'PERMANENT_STATUS_CODE',
      target: `webhook to ${new URL(sink.url).host}`, requestBodyBytes: Buffer.byteLength(sink.requests[0]!.body),
      responseBody: 'no such hook', responseBodyTruncated: false,
    });
    expect(attempt.requestHeaders).toContainEqual({ name: 'webhook-signature', value: REDACTED });
    expect(attempt.requestHeaders).toEqual([...(attempt.requestHeaders as { name: string }[])].sort((a, b) => a.name.localeCompare(b.name)));
    expect(attempt.responseHeaders).toContainEqual({ name: 'x-trace', value: 't-1' });
  });
});

describe('bounds', () => {
  it('redacts secret headers by name and keeps the JSON text within the cap', () => {
    const headers = boundHeaders({
      Authorization: 'Bearer abc', 'X-Api-Key': 'k', 'webhook-signature': 'v1,xyz', 'Proxy-Authorization': 'p', 'x-ok': 'fine',
      'x-long': 'é'.repeat(400),
    }, 1024);
    expect(headers).toEqual({
      authorization: REDACTED, 'x-api-key': REDACTED, 'webhook-signature': REDACTED, 'proxy-authorization': REDACTED, 'x-ok': 'fine',
      'x-long': `${'é'.repeat(254)}…`,
    });
    expect(cutText('a\u0000b\ud800', 10)).toBe('ab\ufffd');
  });

  it('has the table refuse oversized details written around the service', async () => {
    const event = await insertDeadLetter(t.db);
    // The column and its SQL value are this test's own literals (Prisma.raw); the event id is bound.
    const insert = (column: string, value: string) => t.db.$executeRaw`
      insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, duration_ms, outcome, ${Prisma.raw(column)})
      values (${event.id}, 1, 'psql', 0, 'FAILED', ${Prisma.raw(value)})`;
    await expect(insert('target', `repeat('a', 257)`)).rejects.toThrow(/delivery_attempts_target_size/);
    await expect(insert('response_headers', `jsonb_build_object('x', repeat('a', 2100))`)).rejects.toThrow(/delivery_attempts_response_headers_size/);
    await expect(insert('request_headers', `'[]'::jsonb`)).rejects.toThrow(/delivery_attempts_request_headers_size/);
    expect(await t.db.deliveryAttempt.count()).toBe(0);
  });

  it('keeps an attempt with every field at its cap under 8 kB on disk (1M attempts: under 8 GB)', async () => {
    const event = await insertDeadLetter(t.db);
    const capped = (max: number) => boundHeaders(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x-header-${i}`, randomText(300)])), max);
    await t.db.deliveryAttempt.create({
      data: {
        deadLetterId: event.id, attemptNumber: 1, workerId: 'w'.repeat(64), durationMs: 1, outcome: 'PERMANENT_FAILURE', statusCode: 500,
        // Random bytes, so that TOAST compression cannot hide the worst case.
        errorMessage: cutText(randomText(4000), 2048), responseBody: cutText(randomText(4000), 2048), responseBodyTruncated: true,
        failureKind: 'REJECTED', permanentReason: 'PERMANENT_STATUS_CODE', target: cutText(randomText(400), 256),
        requestHeaders: capped(1024), responseHeaders: capped(2048), requestBodyBytes: 1_000_000, requestBodySha256: 'a'.repeat(64),
      },
    });
    const [row] = await t.db.$queryRaw<{ bytes: number }[]>`select pg_column_size(a.*)::int as bytes from delivery_attempts a`;
    console.log(`worst-case attempt row: ${row!.bytes} bytes`);
    expect(row!.bytes).toBeLessThan(8_000);
  });
});

function jsonText(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

function randomText(chars: number): string {
  return Array.from({ length: chars }, () => String.fromCharCode(33 + Math.floor(Math.random() * 90))).join('');
}
