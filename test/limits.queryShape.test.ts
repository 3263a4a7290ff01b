import { once } from 'node:events';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Config } from '../src/config.ts';
import { MAX_REQUEST_BODY_BYTES } from '../src/api/requestLimits.ts';
import { limitRequestBody } from '../src/api/http/bodyLimit.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { startLiveServer } from './helpers/live.ts';

const t = useTestDatabase();

function serverWith(http: Partial<Config['http']> = {}) {
  return testServer(t.db, { http });
}

describe('query limits', () => {
  it.each([1_500, 3_000, 5_000, 10_000])('refuses a list literal nested %i deep with a coded parse error', async (depth) => {
    const query = `{ deadLetter(id: ${'['.repeat(depth)}1${']'.repeat(depth)}) { id } }`;

    const { status, body } = await execute(serverWith(), query);

    expect(status).toBeLessThan(500);
    expect(body.errors?.map((e) => e.extensions?.code)).toEqual(['GRAPHQL_PARSE_FAILED']);
  });

  it('refuses every out-of-range count argument of the schema with BAD_USER_INPUT', async () => {
    const queries = [
      '{ redrives(first: -5) { id } }',
      '{ redrives(first: 0) { id } }',
      '{ redrives(first: 101) { id } }',
      '{ deadLetters(first: -5) { totalCount } }',
      '{ deadLetters(last: -5) { totalCount } }',
      '{ deadLetters { boundedCount(limit: -5) { count } } }',
      '{ deadLetterStats { topErrors(limit: -5) { count } } }',
      '{ deadLetterStats { blockedKeys(limit: -5) { orderingKey } } }',
    ];
    for (const query of queries) {
      const { body } = await execute(serverWith(), query);
      expect({ query, codes: body.errors?.map((e) => e.extensions?.code) }).toEqual({ query, codes: ['BAD_USER_INPUT'] });
    }
  });

  it('rejects a query nested deeper than the limit', async () => {
    const tooDeep = '{ deadLetters { edges { node { deliveryAttempts { a { b { c { d { e } } } } } } } } }';
    const { body } = await execute(serverWith(), tooDeep);
    expect(body.data ?? null).toBeNull();
    expect(body.errors?.map((e) => e.message).join('\n')).toMatch(/depth limit of 8 exceeded/i);
  });

  it('accepts the deepest real query, also through fragments', async () => {
    const nested = `query { deadLetters { edges { node { ...F } } pageInfo { hasNextPage } } }
      fragment F on DeadLetter { deliveryAttempts { id outcome } error { kind } }`;
    expect((await execute(serverWith(), nested)).body.errors).toBeUndefined();
  });

  it('rejects a query whose cost (pages multiplied by their size) is over the limit', async () => {
    const node = 'id eventType queue source status attempts payload headers createdAt updatedAt nextAttemptAt version error { kind message stack } deliveryAttempts { id attemptNumber outcome statusCode durationMs startedAt finishedAt errorMessage }';
    const affordable = await execute(serverWith(), `{ deadLetters(first: 50) { edges { node { ${node} } } } }`);
    const tooCostly = await execute(serverWith(), `{ deadLetters(first: 500) { edges { node { ${node} } } } }`);
    expect(affordable.body.errors).toBeUndefined();
    expect(tooCostly.body.data ?? null).toBeNull();
    expect(tooCostly.body.errors?.[0]?.message).toMatch(/cost limit of 50000 exceeded/i);
  });

  it('rejects more aliases than the limit', async () => {
    const aliases = Array.from({ length: 11 }, (_, i) => `a${i}: deadLetters { totalCount }`).join(' ');
    const { body } = await execute(serverWith(), `{ ${aliases} }`);
    expect(body.data).toBeUndefined();
    expect(body.errors?.[0]?.message).toMatch(/alias/i);
  });

  it('rejects a query over the token limit', async () => {
    const fields = Array.from({ length: 2100 }, () => '__typename').join(' ');
    const { body } = await execute(serverWith(), `{ ${fields} }`);
    expect(body.data ?? null).toBeNull();
    expect(JSON.stringify(body.errors)).toMatch(/token/i);
  });

  it('answers introspection only when it is enabled', async () => {
    const query = '{ __schema { queryType { name } } }';
    expect((await execute(serverWith({ introspection: true }), query)).body).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
    const closed = await execute(serverWith({ introspection: false }), query);
    expect(closed.body.data ?? null).toBeNull();
    expect(closed.body.errors?.[0]?.message).toMatch(/introspection/i);
  });
});

describe('CSRF and CORS', () => {
  it('refuses a GET operation without the CSRF header, and accepts it with the header', async () => {
    const server = serverWith();
    const url = 'http://lazarus/graphql?query=' + encodeURIComponent('{ __typename }');
    const bare = await server.fetch(url, { method: 'GET' });
    const withHeader = await server.fetch(url, { method: 'GET', headers: { 'x-graphql-yoga-csrf': '1' } });
    expect(bare.status).toBe(403);
    expect(withHeader.status).toBe(200);
  });

  it('streams a subscription over GET text/event-stream without the header, as EventSource and GraphiQL send it', async () => {
    const live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const controller = new AbortController();
    try {
      const response = await fetch(`${live.url}?query=${encodeURIComponent('subscription { deadLetterStatsChanged { total } }')}`, {
        headers: { accept: 'text/event-stream' }, signal: controller.signal,
      });
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      while (!text.includes('event: next')) text += (await reader.read()).value ?? '';
      while (!text.includes('\n\n', text.indexOf('event: next'))) text += (await reader.read()).value ?? '';

      expect(response.status).toBe(200);
      expect(text).toMatch(/"deadLetterStatsChanged":\{"total":0\}/);
    } finally {
      controller.abort();
      await live.close();
    }
  });

  it.each([
    ['a query', '{ deadLetters { totalCount } }'],
    ['a mutation', 'mutation { pauseEventType(eventType: "x") { paused } }'],
  ])('still refuses %s over GET text/event-stream without the header, and writes nothing', async (_kind, query) => {
    const response = await serverWith().fetch('http://lazarus/graphql?query=' + encodeURIComponent(query), { method: 'GET', headers: { accept: 'text/event-stream' } });
    const text = await response.text();

    expect(text).not.toMatch(/"data":\{"(deadLetters|pauseEventType)"/);
    expect(text).toMatch(/CSRF|POST request/);
    expect(await t.db.retryPolicy.count({ where: { eventType: 'x' } })).toBe(0);
  });

  it('grants no cross-origin access by default', async () => {
    const response = await serverWith().fetch('http://lazarus/graphql', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('grants cross-origin access to listed origins only, without credentials', async () => {
    const server = serverWith({ corsOrigins: ['https://ops.example.com'] });
    const preflight = (origin: string) =>
      server.fetch('http://lazarus/graphql', { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } });
    const allowed = await preflight('https://ops.example.com');
    const denied = await preflight('https://evil.example');
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://ops.example.com');
    expect(allowed.headers.get('access-control-allow-credentials')).not.toBe('true');
    expect(denied.headers.get('access-control-allow-origin')).not.toBe('https://evil.example');
  });
});

describe('body caps', () => {
  it('answers 413 PAYLOAD_TOO_LARGE for an ordinary operation over the cap', async () => {
    const padding = 'x'.repeat(2048);
    const response = await serverWith({ maxBodyBytes: 1024 }).fetch('http://lazarus/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `{ __typename } # ${padding}` }),
    });
    expect(response.status).toBe(413);
    expect((await response.json()).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('lets a batch-ingest mutation past the ordinary cap', async () => {
    const padding = 'x'.repeat(2048);
    const response = await serverWith({ maxBodyBytes: 1024 }).fetch('http://lazarus/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `mutation { recordDeadLetters } # ${padding}` }),
    });
    const body = await response.json();
    expect(body.errors?.[0]?.extensions?.code).not.toBe('PAYLOAD_TOO_LARGE');
  });

  it('answers 413 for a declared length over the absolute cap, and 400 for an invalid one', async () => {
    const post = (contentLength: string) =>
      serverWith().fetch('http://lazarus/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': contentLength },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
    const tooLarge = await post(String(MAX_REQUEST_BODY_BYTES + 1));
    const invalid = await post('12, 12');
    expect(tooLarge.status).toBe(413);
    expect((await tooLarge.json()).errors[0].extensions.code).toBe('REQUEST_ENTITY_TOO_LARGE');
    expect(invalid.status).toBe(400);
  });

  it('counts a body of undeclared length against the absolute cap', async () => {
    const streamed = (bytes: number) => {
      const json = new TextEncoder().encode(JSON.stringify({ query: '{ __typename }' }));
      const chunk = new Uint8Array(1 << 20).fill(0x20); // spaces after the JSON are still valid JSON
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent === 0) controller.enqueue(json);
          if (sent >= bytes) return controller.close();
          controller.enqueue(chunk.subarray(0, Math.min(chunk.length, bytes - sent)));
          sent += chunk.length;
        },
      });
      return serverWith().fetch('http://lazarus/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half' } as RequestInit);
    };
    const small = await streamed(1 << 20);
    const huge = await streamed(MAX_REQUEST_BODY_BYTES + (1 << 20));
    expect(small.status).toBe(200);
    expect(await small.json()).toEqual({ data: { __typename: 'Query' } });
    expect(huge.status).toBe(413);
  });

  it('refuses bodies over the hard cap, and POSTs without a length, before reading them', async () => {
    let reached = 0;
    const server = createServer(limitRequestBody((_req, res) => (reached++, res.end('ok')), 1024));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const send = (headers: Record<string, string>, body: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/graphql', headers }, (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    try {
      const big = await send({ 'content-length': '4096' }, 'y'.repeat(4096)).catch(() => ({ status: 413, body: '' }));
      const chunked = await send({ 'transfer-encoding': 'chunked' }, 'small');
      const fine = await send({ 'content-length': '5' }, 'small');
      expect(big.status).toBe(413);
      expect(chunked.status).toBe(411);
      expect(fine).toEqual({ status: 200, body: 'ok' });
      expect(reached).toBe(1);
    } finally {
      server.close();
    }
  });
});
