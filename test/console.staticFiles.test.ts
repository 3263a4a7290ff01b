// The console's files as the service serves them (src/api/http/console.ts), from a small built folder.
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConsoleSite } from '../src/api/http/console.ts';

const INDEX = '<!doctype html><title>Lazarus</title>';
const SCRIPT = 'console.log("app")';
let dir: string;
let server: Server;
let base: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lazarus-console-'));
  await mkdir(join(dir, 'assets'));
  for (const [name, text] of [['index.html', INDEX], ['assets/app-abc123.js', SCRIPT]] as const) {
    await writeFile(join(dir, name), text);
    await writeFile(join(dir, `${name}.br`), brotliCompressSync(text));
    await writeFile(join(dir, `${name}.gz`), gzipSync(text));
  }
  server = createServer(openConsoleSite(dir)!.handle).listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Status and headers as sent, without fetch's transparent decompression. */
function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; type?: string; encoding?: string }> {
  return new Promise((resolve, reject) => {
    request(`${base}${path}`, { headers }, (res) => {
      res.resume();
      resolve({ status: res.statusCode!, type: res.headers['content-type'], encoding: res.headers['content-encoding'] });
    })
      .on('error', reject)
      .end();
  });
}

describe('precompressed files', () => {
  it.each(['/index.html.br', '/index.html.gz', '/assets/app-abc123.js.br', '/assets/app-abc123.js.gz', '/index.html%2Ebr', '/index.html.br/'])(
    'answers a direct request for %s with 404, whatever the client accepts',
    async (path) => {
      expect(await get(path)).toMatchObject({ status: 404 });
      expect(await get(path, { 'accept-encoding': 'br, gzip' })).toMatchObject({ status: 404 });
    },
  );

  it('still sends them for the plain name to a client that accepts them, and the plain file to one that does not', async () => {
    expect(await get('/index.html', { 'accept-encoding': 'br' })).toEqual({ status: 200, type: 'text/html;charset=utf-8', encoding: 'br' });
    expect(await get('/assets/app-abc123.js', { 'accept-encoding': 'gzip' })).toEqual({ status: 200, type: 'text/javascript', encoding: 'gzip' });
    expect(await get('/failures/42')).toEqual({ status: 200, type: 'text/html;charset=utf-8', encoding: undefined });
  });
});

describe('the built console', () => {
  it('answers /favicon.ico with an icon', async () => {
    const built = fileURLToPath(new URL('../web/dist', import.meta.url));
    if (!existsSync(join(built, 'index.html'))) throw new Error('the console is not built: run `npm run build:web` (npm install does it)');
    const site = createServer(openConsoleSite(built)!.handle).listen(0, '127.0.0.1');
    await once(site, 'listening');
    try {
      const response = await fetch(`http://127.0.0.1:${(site.address() as AddressInfo).port}/favicon.ico`);
      const body = Buffer.from(await response.arrayBuffer());
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/x-icon');
      expect(body.subarray(0, 4)).toEqual(Buffer.from([0, 0, 1, 0])); // an ICO header
    } finally {
      site.close();
    }
  });
});
