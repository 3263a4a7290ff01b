// The producer client against a real listening HTTP server, with a proxy in front that loses
// responses, to show that retries are safe.
import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeyAuthenticator } from '../src/api/auth/apiKeys.ts';
import { LazarusClient, LazarusError } from '../src/client/lazarusClient.ts';
import { parseApiKeys } from '../src/config.ts';
import { useTestDatabase } from './helpers/db.ts';
import { testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
const TOKEN = 'producer-token-0123456789';
let server: Server;
let proxy: Server;
let url = '';
let proxyUrl = '';
/** How the proxy treats the next requests: forward, answer 503, or forward and drop the response. */
const plan: ('forward' | '503' | 'lose-response')[] = [];
let proxied = 0;

async function listen(s: Server): Promise<string> {
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}/graphql`;
}

beforeAll(async () => {
  const yoga = testServer(t.db, {
    authenticate: createApiKeyAuthenticator(parseApiKeys(`orders-service:operator:${TOKEN},dash:viewer:viewer-token-0123456789`)),
  });
  server = createServer(yoga);
  url = await listen(server);
  proxy = createServer((req, res) => {
    proxied += 1;
    const step = plan.shift() ?? 'forward';
    if (step === '503') return void res.writeHead(503).end('unavailable');
    const upstream = httpRequest(url, { method: req.method, headers: req.headers }, (up) => {
      if (step === 'lose-response') {
        up.resume();
        up.on('end', () => res.socket?.destroy());
        return;
      }
      res.writeHead(up.statusCode ?? 500, up.headers);
      up.pipe(res);
    });
    req.pipe(upstream);
  });
  proxyUrl = await listen(proxy);
});

afterAll(async () => {
  proxy.closeAllConnections();
  server.closeAllConnections();
  await Promise.all([new Promise((r) => proxy.close(r)), new Promise((r) => server.close(r))]);
});

const client = (extra: Partial<ConstructorParameters<typeof LazarusClient>[0]> = {}) =>
  new LazarusClient({ url: proxyUrl, apiKey: TOKEN, minBackoffMs: 1, maxBackoffMs: 5, ...extra });

describe('LazarusClient', () => {
  it('dead-letters one event from a thrown Error, recording the key name as actor', async () => {
    const error = new Error('HTTP 503 from inventory');
    const result = await client().deadLetter({ eventType: 'order.placed', payload: { orderId: 7 }, error, errorKind: 'DOWNSTREAM_API', dedupeKey: 'o-7' });
    expect(result).toEqual({ id: '1', created: true, dedupeKey: 'o-7' });
    const row = await t.db.deadLetter.findUniqueOrThrow({ where: { id: 1n } });
    expect(row).toMatchObject({ eventType: 'order.placed', payload: { orderId: 7 }, errorKind: 'DOWNSTREAM_API', errorMessage: 'HTTP 503 from inventory' });
    expect(row.errorStack).toContain('HTTP 503 from inventory');
    expect((await t.db.deadLetterAction.findFirstOrThrow()).actor).toBe('orders-service');
  });

  it('retries through 503s and lost responses and stores each event once', async () => {
    plan.push('503', 'lose-response', '503');
    proxied = 0;
    const inputs = Array.from({ length: 3 }, (_, i) => ({ eventType: 'e', payload: { i } }));
    const results = await client().deadLetterMany(inputs);
    expect(proxied).toBe(4);
    expect(results.map((r) => r.created)).toEqual([true, true, true]);
    expect(new Set(results.map((r) => r.dedupeKey)).size).toBe(3);
    expect(await t.db.deadLetter.count()).toBe(3);
  });

  it('reports a duplicate of a caller-given dedupe key as not created', async () => {
    const c = client();
    await c.deadLetter({ eventType: 'e', payload: 1, dedupeKey: 'same' });
    expect(await c.deadLetter({ eventType: 'e', payload: 1, dedupeKey: 'same' })).toEqual({ id: '1', created: false, dedupeKey: 'same' });
  });

  it('splits large batches and maps a validation failure to the caller’s index', async () => {
    const inputs = Array.from({ length: 7 }, (_, i) => ({ eventType: i === 5 ? '' : 'e', payload: i }));
    const error = await client({ batchSize: 3 }).deadLetterMany(inputs).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LazarusError);
    expect(error).toMatchObject({ code: 'VALIDATION', field: 'eventType', index: 5 });
    expect(await t.db.deadLetter.count()).toBe(3);
  });

  it('does not retry auth failures', async () => {
    proxied = 0;
    await expect(client({ apiKey: 'wrong-token-0123456789' }).deadLetter({ eventType: 'e', payload: 1 })).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(client({ apiKey: 'viewer-token-0123456789' }).deadLetter({ eventType: 'e', payload: 1 })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(proxied).toBe(2);
  });

  it('gives up with UNAVAILABLE when the server stays down', async () => {
    plan.push('503', '503', '503');
    await expect(client({ retries: 2 }).deadLetter({ eventType: 'e', payload: 1 })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(await t.db.deadLetter.count()).toBe(0);
  });
});
