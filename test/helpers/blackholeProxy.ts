// A TCP proxy in front of PostgreSQL that can turn its current connections into half-open ones:
// bytes stop flowing both ways, but no FIN or RST is sent, like a dead NAT entry or a cut cable.
import { createServer, connect, type Socket } from 'node:net';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

export interface BlackholeProxy {
  /** The upstream URL with host and port pointed at the proxy. */
  url: string;
  /** Silently stops every connection open right now; new connections work normally. */
  blackholeOpenConnections(): void;
  /**
   * For the connection whose startup message named this application_name: waits for its next
   * request, lets it and the reply through, then goes silent — the worst moment for a client that
   * checks its connection with periodic queries. Resolves with Date.now() when it turns half-open.
   */
  blackholeApplicationAfterNextReply(applicationName: string): Promise<number>;
  close(): Promise<void>;
}

export async function startBlackholeProxy(upstreamUrl: string): Promise<BlackholeProxy> {
  const upstream = new URL(upstreamUrl);
  type Pair = { client: Socket; server: Socket; dead: boolean; applicationName?: string; armed?: 'request' | 'reply'; onDead?: () => void };
  const open = new Set<Pair>();
  const proxy = createServer((client) => {
    const server = connect(Number(upstream.port || 5432), upstream.hostname);
    const pair: Pair = { client, server, dead: false };
    open.add(pair);
    client.once('data', (d) => (pair.applicationName = startupParameters(d).application_name));
    client.on('data', (d) => {
      if (pair.dead) return;
      server.write(d);
      if (pair.armed === 'request') pair.armed = 'reply';
    });
    server.on('data', (d) => {
      if (pair.dead) return;
      client.write(d);
      if (pair.armed === 'reply') {
        pair.dead = true;
        pair.onDead?.();
      }
    });
    const end = () => {
      open.delete(pair);
      client.destroy();
      server.destroy();
    };
    client.on('close', end).on('error', end);
    server.on('close', end).on('error', end);
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  const url = new URL(upstreamUrl);
  url.hostname = '127.0.0.1';
  url.port = String((proxy.address() as AddressInfo).port);
  return {
    url: url.toString(),
    blackholeOpenConnections() {
      for (const pair of open) pair.dead = true;
    },
    blackholeApplicationAfterNextReply(applicationName) {
      const pair = [...open].find((p) => p.applicationName === applicationName && !p.dead);
      if (!pair) return Promise.reject(new Error(`no open connection of ${applicationName}`));
      return new Promise((resolve) => {
        pair.onDead = () => resolve(Date.now());
        pair.armed = 'request';
      });
    },
    async close() {
      for (const pair of open) {
        pair.client.destroy();
        pair.server.destroy();
      }
      await new Promise((resolve) => proxy.close(resolve));
    },
  };
}

// The client's first message (no TLS here): int32 length, int32 protocol 3.0, then
// name\0value\0 pairs. Anything else (an SSLRequest, a cancel) yields no parameters.
function startupParameters(message: Buffer): Record<string, string> {
  if (message.length < 8 || message.readInt32BE(4) !== 196608) return {};
  const parts = message.subarray(8, message.readInt32BE(0)).toString('utf8').split('\0');
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < parts.length && parts[i]; i += 2) out[parts[i]!] = parts[i + 1]!;
  return out;
}
