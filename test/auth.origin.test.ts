// What a web page in the operator's browser can reach: the Origin check on HTTP, SSE and the
// WebSocket handshake, and the Host check that keeps the keyless local admin to loopback names.
import { request as httpRequest } from 'node:http';
import { createClient } from 'graphql-ws';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, type ClientOptions } from 'ws';
import { createApiKeyAuthenticator } from '../src/api/auth/apiKeys.ts';
import { useTestDatabase } from './helpers/db.ts';
import { startLiveServer, type LiveServer } from './helpers/live.ts';

const t = useTestDatabase();
const ALLOWED = 'https://ops.example.com';
const VIEWER_ROLE = '{ viewer { role } }';
let live: LiveServer | undefined;

afterEach(async () => {
  await live?.close();
  live = undefined;
});

/** A keyless service (the default) on 127.0.0.1 with one other origin allowed. */
async function keylessServer(): Promise<{ url: string; host: string }> {
  live = await startLiveServer({ databaseUrl: t.url, db: t.db, authenticate: createApiKeyAuthenticator([]), allowedOrigins: [ALLOWED] });
  return { url: live.url, host: new URL(live.url).host };
}

/** A raw HTTP exchange, so Host and Origin are exactly what a browser would send. */
function send(url: string, init: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: init.method ?? 'GET', headers: init.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
      // An SSE stream that was accepted stays open: its status is the answer.
      if (res.headers['content-type']?.includes('text/event-stream')) {
        resolve({ status: res.statusCode!, body: '' });
        res.destroy();
      }
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

function postQuery(url: string, headers: Record<string, string>) {
  const body = JSON.stringify({ query: VIEWER_ROLE });
  return send(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers }, body });
}

/** `viewer { role }` over graphql-ws, with the handshake's headers set as `options` says; or how it closed or failed. */
async function viewerRoleOverWebSocket(url: string, options: ClientOptions): Promise<unknown> {
  const Impl = class extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, options);
    }
  };
  const client = createClient({ url: url.replace('http', 'ws'), webSocketImpl: Impl, retryAttempts: 0, lazy: true });
  try {
    return (await client.iterate({ query: VIEWER_ROLE }).next()).value;
  } catch (event) {
    const { code, message } = event as { code?: number; message?: string };
    return code !== undefined ? { closed: code } : { failed: message };
  } finally {
    await client.dispose();
  }
}

/** The answer to a bare WebSocket handshake: 101 when upgraded, else the refusal's status and text. */
function handshake(url: string, options: ClientOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url.replace('http', 'ws'), 'graphql-transport-ws', options);
    socket.on('open', () => {
      socket.close();
      resolve({ status: 101, body: '' });
    });
    socket.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    socket.on('error', (error) => {
      if (!/Unexpected server response/.test(error.message)) reject(error);
    });
  });
}

describe('Origin on the WebSocket handshake', () => {
  it('refuses the upgrade with 403 for a page of another origin', async () => {
    const { url } = await keylessServer();

    const refused = await handshake(url, { origin: 'http://127.0.0.1:5555' });

    expect(refused).toEqual({ status: 403, body: expect.stringMatching(/CORS_ORIGINS/) });
    expect(await viewerRoleOverWebSocket(url, { origin: 'http://evil.example' })).toEqual({ failed: 'Unexpected server response: 403' });
  });

  it('lets the service’s own pages, allowed origins and clients without an Origin in', async () => {
    const { url, host } = await keylessServer();

    for (const origin of [`http://${host}`, ALLOWED, undefined]) {
      expect(await viewerRoleOverWebSocket(url, origin ? { origin } : {})).toEqual({ data: { viewer: { role: 'ADMIN' } } });
    }
  });
});

describe('Origin over HTTP and SSE', () => {
  it('refuses a query and a subscription stream from another origin with 403 FORBIDDEN', async () => {
    const { url } = await keylessServer();
    const stream = `${url}?query=${encodeURIComponent('subscription { deadLetterAdded { deadLetter { id } } }')}`;

    const query = await postQuery(url, { origin: 'http://evil.example' });
    const sse = await send(stream, { headers: { accept: 'text/event-stream', origin: 'http://evil.example' } });

    expect(query.status).toBe(403);
    expect(JSON.parse(query.body).errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' }, message: expect.stringMatching(/CORS_ORIGINS/) });
    expect(sse.status).toBe(403);
    expect((await send(stream, { headers: { accept: 'text/event-stream', origin: ALLOWED } })).status).toBe(200);
  });

  it('answers the same origin, an allowed origin and a caller without an Origin', async () => {
    const { url, host } = await keylessServer();

    for (const headers of [{ origin: `http://${host}` }, { origin: ALLOWED }, {}] as Record<string, string>[]) {
      const { status, body } = await postQuery(url, headers);
      expect({ status, body: JSON.parse(body) }).toEqual({ status: 200, body: { data: { viewer: { role: 'ADMIN' } } } });
    }
  });
});

describe('Host without API keys', () => {
  it('answers a non-loopback host name (DNS rebinding) with 403 and how to fix it, never as admin', async () => {
    const { url } = await keylessServer();
    const rebound = { host: 'evil.example', origin: 'http://evil.example' };

    const { status, body } = await postQuery(url, rebound);

    expect(status).toBe(403);
    expect(JSON.parse(body)).toEqual({ data: null, errors: [{ message: expect.stringMatching(/LAZARUS_API_KEYS.*loopback/), extensions: { code: 'FORBIDDEN' } }] });
    expect(await viewerRoleOverWebSocket(url, { headers: { host: rebound.host }, origin: rebound.origin })).toEqual({ closed: 4403 });
  });

  it('answers every spelling of a loopback host as the local admin', async () => {
    const { url } = await keylessServer();
    const port = new URL(url).port;

    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `127.9.8.7:${port}`, `[::1]:${port}`, 'LOCALHOST']) {
      expect(JSON.parse((await postQuery(url, { host })).body)).toEqual({ data: { viewer: { role: 'ADMIN' } } });
    }
  });
});
