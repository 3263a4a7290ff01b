// A real listening server with the live feed, pointed at a test database.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { LOCAL_PRINCIPAL, type Authenticate } from '../../src/api/auth/principal.ts';
import type { Db } from '../../src/db/createDb.ts';
import { createLivePubSub } from '../../src/live/liveEvents.ts';
import { createGraphQLServer, type GraphQLServer } from '../../src/api/server.ts';
import { attachGraphQLWebSocket } from '../../src/api/webSocket.ts';
import { createChangeFeed, type ChangeFeed } from '../../src/live/changeFeed.ts';
import { createChangeListener, type ChangeListener } from '../../src/live/changeListener.ts';

export interface LiveServer {
  url: string;
  yoga: GraphQLServer;
  feed: ChangeFeed;
  listener: ChangeListener;
  close(): Promise<void>;
}

export interface LiveServerOptions {
  databaseUrl: string;
  db: Db;
  logger?: Logger;
  fallbackPollMs?: number;
  maxQueuedEvents?: number;
  applicationName?: string;
  /** Where the LISTEN connection goes (defaults to databaseUrl). */
  listenUrl?: string;
  paranoidCheckMs?: number;
  queryTimeoutMs?: number;
  /** The listener's longest wait between reconnect attempts. */
  maxBackoffMs?: number;
  authenticate?: Authenticate;
  /** Browser origins besides the server's own allowed over HTTP and WebSocket (CORS_ORIGINS). */
  allowedOrigins?: readonly string[];
  graphiql?: boolean;
}

export async function startLiveServer(o: LiveServerOptions): Promise<LiveServer> {
  const logger = o.logger ?? pino({ level: 'silent' });
  const authenticate = o.authenticate ?? (() => LOCAL_PRINCIPAL);
  const allowedOrigins = o.allowedOrigins ?? [];
  const listener = createChangeListener({
    url: o.listenUrl ?? o.databaseUrl,
    logger,
    applicationName: o.applicationName,
    paranoidCheckMs: o.paranoidCheckMs,
    queryTimeoutMs: o.queryTimeoutMs,
    maxBackoffMs: o.maxBackoffMs,
  });
  const feed = createChangeFeed({ db: o.db, listener, events: createLivePubSub(), logger, fallbackPollMs: o.fallbackPollMs, maxQueuedEvents: o.maxQueuedEvents });
  await feed.start();
  await listener.start();
  const yoga = createGraphQLServer({ db: o.db, logger, graphiql: o.graphiql ?? false, authenticate, http: { corsOrigins: allowedOrigins }, isReady: async () => listener.isConnected(), live: feed });
  const server = createServer(yoga);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const ws = attachGraphQLWebSocket({ server, yoga, authenticate, allowedOrigins, logger });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    yoga,
    feed,
    listener,
    async close() {
      await ws.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await listener.stop();
      await feed.stop();
    },
  };
}

/** Waits (by feed reads, not sleeps) until `condition` holds. */
export async function untilFed(feed: ChangeFeed, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await feed.caughtUp();
  }
}

/**
 * Waits until a running service (its own process or in this one) reports at least `n` open
 * subscriptions on its change feed (`lazarus_live_subscriptions` on /metrics): only then is a new
 * row theirs to see. `headers` carry a key when the service has them.
 */
export async function untilSubscribed(serviceUrl: string, n: number, timeoutMs = 15_000, headers: Record<string, string> = {}): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; ; ) {
    const count = await liveSubscriptions(serviceUrl, headers);
    if (count !== null && count >= n) return;
    if (Date.now() > deadline) throw new Error(`live subscriptions never reached ${n} (last: ${count ?? 'none'})`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The service's open live subscriptions, from its /metrics (null when it reports none). */
export async function liveSubscriptions(serviceUrl: string, headers: Record<string, string> = {}): Promise<number | null> {
  const text = await (await fetch(`${serviceUrl}/metrics`, { headers })).text();
  const m = /^lazarus_live_subscriptions(?:\{[^}]*\})? (\d+)/m.exec(text);
  return m ? Number(m[1]) : null;
}
