// Shared Redis connections, one per URL (credentials included) and role, for the `redis` target kind
// and the Redis bridges. A bridge's blocking XREADGROUP takes its own role, so it never holds up the
// target's XADDs on the same connection.
//
// Lifecycle of one connection: idle (DISCONNECTED, never opened) → CONNECTING (first connect) →
// CONNECTED ⇄ DISCONNECTED. ioredis reconnects by itself after any loss, the first connect's
// included, with our backoff as its retryStrategy. There is no offline queue and no resend: while
// not CONNECTED, `client()` fails at once with BrokerUnreachableError, and a command in flight when
// the connection drops fails (it may have been applied: the caller retries, at-least-once).
// close() disconnects; the next `client()` connects again.
import { Redis } from 'ioredis';
import { abortable, BrokerUnreachableError, decodeCredential, ConnectionState, reconnectDelayMs, type ConnectionHealth, type ReconnectOptions } from './connectionState.ts';

const DEFAULT_PORT = '6379';
const MAX_URL_LENGTH = 2000;
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

/** A Redis URL taken apart. */
export interface RedisServer {
  hostname: string;
  /** Host, with a port when it is not 6379: what health and descriptions show. */
  display: string;
  /** User name and password, to scrub from error texts. */
  secrets: string[];
}

/** Parses `redis://[user:pass@]host[:port][/db]` or `rediss://…` (TLS). Returns the problem as text. */
export function parseRedisUrl(url: string): RedisServer | { problem: string } {
  if (url.length > MAX_URL_LENGTH) return { problem: `url must be at most ${MAX_URL_LENGTH} characters` };
  const parsed = URL.parse(url);
  if (!parsed || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || !parsed.hostname) {
    return { problem: 'url must be redis://host:port or rediss://host:port' };
  }
  if (!/^\/?\d*$/.test(parsed.pathname) || parsed.search || parsed.hash) {
    return { problem: 'url may have a database number as its path, and no query or fragment' };
  }
  const port = parsed.port || DEFAULT_PORT;
  // A user name is scrubbed too, unless so short that scrubbing it would garble every message.
  const secrets = [parsed.username.length >= 4 ? parsed.username : '', parsed.password].filter(Boolean).flatMap((s) => [s, decodeCredential(s)]);
  return { hostname: parsed.hostname, display: port === DEFAULT_PORT ? parsed.hostname : `${parsed.hostname}:${port}`, secrets };
}

export interface RedisConnectionsOptions extends ReconnectOptions {
  /** How long a connect waits; default 5 s. */
  connectTimeoutMs?: number;
}

/** One shared connection. */
export interface RedisConnectionHandle {
  health(): ConnectionHealth;
  /** The ready client, connecting on first use; throws BrokerUnreachableError when not connected. */
  client(signal?: AbortSignal): Promise<Redis>;
  whenState: ConnectionState['whenState'];
  /** Scrubs this connection's credentials out of a text (a Redis error's, say). */
  scrub(text: string): string;
  close(): Promise<void>;
}

export interface RedisConnections {
  /** The connection for `url` and `role` (default `publish`); the same object for the same pair. */
  get(url: string, role?: string): RedisConnectionHandle;
  health(): ConnectionHealth[];
  /** Closes every connection; each opens again on its next use. */
  close(): Promise<void>;
}

export function createRedisConnections(options: RedisConnectionsOptions = {}): RedisConnections {
  const connections = new Map<string, RedisConnectionHandle>();
  return {
    get(url, role = 'publish') {
      const key = `${role} ${url}`;
      let connection = connections.get(key);
      if (!connection) {
        const server = parseRedisUrl(url);
        if ('problem' in server) throw new TypeError(server.problem);
        connection = openRedisConnection(url, server, options);
        connections.set(key, connection);
      }
      return connection;
    },
    health: () => [...connections.values()].map((c) => c.health()),
    close: async () => {
      await Promise.all([...connections.values()].map((c) => c.close()));
    },
  };
}

function openRedisConnection(url: string, server: RedisServer, options: RedisConnectionsOptions): RedisConnectionHandle {
  const state = new ConnectionState(server.display, server.secrets);
  let redis: Redis | null = null;
  let connecting: Promise<void> | null = null;

  const open = (): Redis => {
    const opened = new Redis(url, {
      lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false,
      connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, connectionName: 'lazarus',
      retryStrategy: (times) => reconnectDelayMs(times - 1, options),
    });
    const isCurrent = () => redis === opened;
    opened.on('ready', () => isCurrent() && state.set('CONNECTED'));
    opened.on('error', (error: Error) => isCurrent() && state.fail(error));
    opened.on('close', () => isCurrent() && state.state === 'CONNECTED' && state.fail(`connection to ${server.display} closed`, 'DISCONNECTED'));
    opened.on('reconnecting', () => isCurrent() && state.set('DISCONNECTED'));
    redis = opened;
    state.set('CONNECTING');
    connecting = opened.connect().catch(() => {
      if (isCurrent()) state.set('DISCONNECTED');
    }).finally(() => {
      connecting = null;
    });
    return opened;
  };

  return {
    health: () => state.health(),
    async client(signal) {
      const current = redis ?? open();
      if (connecting) await abortable(connecting, signal);
      if (current.status === 'ready' && redis === current) return current;
      throw new BrokerUnreachableError(`not connected to Redis at ${server.display}: ${state.health().lastError ?? `connection ${current.status}`}`);
    },
    whenState: (s, signal) => state.whenState(s, signal),
    scrub: (text) => state.scrub(text),
    async close() {
      const closing = redis;
      redis = null;
      connecting = null;
      state.set('DISCONNECTED');
      closing?.disconnect();
    },
  };
}
