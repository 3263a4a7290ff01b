// Shared NATS connections, one per server list and credentials, for the `nats` target kind and the
// NATS bridges. A connection opens on first use and is then kept by every user of the same URL.
//
// Lifecycle of one connection: idle (DISCONNECTED, never opened) → CONNECTING (first dial) →
// CONNECTED. A failed first dial leaves it DISCONNECTED and dials again after a backoff (the NATS
// client only reconnects a connection it once had). Once connected, the client's own reconnect
// takes over (forever, with our backoff as its delay): a lost server is DISCONNECTED until the
// client's `reconnect` status. While not CONNECTED, `client()` fails at once with
// BrokerUnreachableError rather than buffering a publish until it times out. close() ends the
// client and clears the retry timer; the next `client()` dials again.
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { abortable, BrokerUnreachableError, decodeCredential, ConnectionState, reconnectDelayMs, type ConnectionHealth, type ReconnectOptions } from './connectionState.ts';

const DEFAULT_PORT = '4222';
const MAX_URL_LENGTH = 2000;
const MAX_SERVERS = 16;
/** How long a dial waits for the server's handshake. */
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

/** A NATS URL taken apart: the servers without credentials, and the credentials on their own. */
export interface NatsServers {
  /** `nats://host:port` (or `tls://…`), credentials removed. */
  servers: string[];
  /** Each server's host name or address literal, for the private-host check. */
  hostnames: string[];
  /** Host(s), with a port when it is not 4222: what health and descriptions show. */
  display: string;
  user?: string;
  pass?: string;
  token?: string;
}

/**
 * Parses `nats://[user:pass@|token@]host[:port]`, several separated by commas (`tls://` for TLS).
 * All servers share one set of credentials (the client has one). Returns the problem as text.
 */
export function parseNatsUrl(url: string): NatsServers | { problem: string } {
  if (url.length > MAX_URL_LENGTH) return { problem: `url must be at most ${MAX_URL_LENGTH} characters` };
  const parts = url.split(',').map((p) => p.trim());
  if (parts.length > MAX_SERVERS) return { problem: `url may name at most ${MAX_SERVERS} servers` };
  const servers: string[] = [];
  const hostnames: string[] = [];
  const shown: string[] = [];
  let credentials: string | null = null;
  for (const part of parts) {
    const parsed = URL.parse(part);
    if (!parsed || (parsed.protocol !== 'nats:' && parsed.protocol !== 'tls:') || !parsed.hostname) {
      return { problem: 'url must be nats://host:port (or tls://), several separated by commas' };
    }
    if ((parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search || parsed.hash) {
      return { problem: 'url must not have a path, query or fragment' };
    }
    const these = `${parsed.username}:${parsed.password}`;
    if (these !== ':') {
      if (credentials !== null && credentials !== these) return { problem: 'every server in url must have the same credentials' };
      credentials = these;
    }
    const port = parsed.port || DEFAULT_PORT;
    servers.push(`${parsed.protocol}//${parsed.hostname}:${port}`);
    hostnames.push(parsed.hostname);
    shown.push(port === DEFAULT_PORT ? parsed.hostname : `${parsed.hostname}:${port}`);
  }
  const result: NatsServers = { servers, hostnames, display: [...new Set(shown)].join(',') };
  if (credentials !== null) {
    const [user, pass] = credentials.split(':').map(decodeCredential) as [string, string];
    if (pass) Object.assign(result, { user, pass });
    else Object.assign(result, { token: user });
  }
  return result;
}

export interface NatsConnectionsOptions extends ReconnectOptions {
  /** How long a dial waits for the server's handshake; default 5 s. */
  connectTimeoutMs?: number;
  /** Shown to the server (`connz`); default `lazarus`. */
  name?: string;
}

/** One shared connection. */
export interface NatsConnectionHandle {
  health(): ConnectionHealth;
  /** The connected client, dialling on first use; throws BrokerUnreachableError when not connected. */
  client(signal?: AbortSignal): Promise<NatsConnection>;
  /** A JetStream client on the connection (one per connection). */
  jetstream(signal?: AbortSignal): Promise<JetStreamClient>;
  whenState: ConnectionState['whenState'];
  /** Scrubs this connection's credentials out of a text (a client error's, say). */
  scrub(text: string): string;
  close(): Promise<void>;
}

export interface NatsConnections {
  /** The connection for `url` (as parseNatsUrl accepts it); the same object for the same URL. */
  get(url: string): NatsConnectionHandle;
  health(): ConnectionHealth[];
  /** Closes every connection; each opens again on its next use. */
  close(): Promise<void>;
}

export function createNatsConnections(options: NatsConnectionsOptions = {}): NatsConnections {
  const connections = new Map<string, NatsConnectionHandle>();
  return {
    get(url) {
      let connection = connections.get(url);
      if (!connection) {
        const servers = parseNatsUrl(url);
        if ('problem' in servers) throw new TypeError(servers.problem);
        connection = openNatsConnection(servers, options);
        connections.set(url, connection);
      }
      return connection;
    },
    health: () => [...connections.values()].map((c) => c.health()),
    close: async () => {
      await Promise.all([...connections.values()].map((c) => c.close()));
    },
  };
}

function openNatsConnection(servers: NatsServers, options: NatsConnectionsOptions): NatsConnectionHandle {
  // A user name is scrubbed too, unless so short that scrubbing it would garble every message.
  const secrets = [servers.pass, servers.token, servers.user && servers.user.length >= 4 ? servers.user : undefined];
  const state = new ConnectionState(servers.display, secrets.filter((s): s is string => !!s));
  let nc: NatsConnection | null = null;
  let js: JetStreamClient | null = null;
  let dialling: Promise<NatsConnection> | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let failedDials = 0;
  let reconnects = 0;
  // Bumped by close(): a dial or a status watcher of an earlier epoch no longer owns the handle.
  let epoch = 0;

  const dial = async (): Promise<NatsConnection> => {
    const mine = epoch;
    // A redial after a failed one stays DISCONNECTED (with its last error) until it succeeds: what
    // on-call needs to see is that nothing is connected, not that a retry is in flight.
    if (failedDials === 0) state.set('CONNECTING');
    try {
      const opened = await connect({
        servers: servers.servers, user: servers.user, pass: servers.pass, token: servers.token,
        name: options.name ?? 'lazarus', timeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
        // Only the servers the URL names: a cluster's gossiped addresses may be private ones the
        // private-host check never saw.
        ignoreClusterUpdates: true,
        reconnect: true, maxReconnectAttempts: -1,
        reconnectDelayHandler: () => reconnectDelayMs(reconnects++, options),
        // The client otherwise builds two Errors per request up front (a JetStream publish is one),
        // for the stack a timeout would show: ~10% of a redrive's CPU (bench:broker:nats, --cpu-prof).
        // A failed publish is reported as Lazarus's own message, which names the target, not a stack.
        noAsyncTraces: true,
      });
      if (mine !== epoch) {
        await opened.close();
        throw new BrokerUnreachableError(`connection to ${servers.display} was closed`);
      }
      nc = opened;
      js = jetstream(opened);
      failedDials = 0;
      reconnects = 0;
      state.set('CONNECTED');
      void watch(opened, mine);
      return opened;
    } catch (error) {
      if (error instanceof BrokerUnreachableError) throw error;
      const message = state.fail(error, 'DISCONNECTED');
      if (mine === epoch) {
        retryTimer = setTimeout(() => {
          retryTimer = null;
          dialling = dial();
          dialling.catch(() => {});
        }, reconnectDelayMs(failedDials++, options));
        retryTimer.unref();
      }
      throw new BrokerUnreachableError(`cannot connect to NATS at ${servers.display}: ${message}`);
    } finally {
      dialling = null;
    }
  };

  const watch = async (opened: NatsConnection, mine: number) => {
    for await (const status of opened.status()) {
      if (mine !== epoch) return;
      if (status.type === 'disconnect') state.fail(`disconnected from ${servers.display}`, 'DISCONNECTED');
      else if (status.type === 'reconnect') {
        reconnects = 0;
        state.set('CONNECTED');
      } else if (status.type === 'error') state.fail(status.error);
      else if (status.type === 'close') break;
    }
    // The client closed itself (an authorisation error it will not retry, say): dial anew next time.
    if (mine === epoch && nc === opened) {
      nc = null;
      js = null;
      state.set('DISCONNECTED');
    }
  };

  const client = async (signal?: AbortSignal): Promise<NatsConnection> => {
    if (nc) {
      if (state.state === 'CONNECTED') return nc;
      throw new BrokerUnreachableError(`not connected to NATS at ${servers.display} (reconnecting): ${state.health().lastError ?? 'connection lost'}`);
    }
    if (retryTimer) throw new BrokerUnreachableError(`cannot connect to NATS at ${servers.display}: ${state.health().lastError}`);
    dialling ??= dial();
    return abortable(dialling, signal);
  };

  return {
    health: () => state.health(),
    client,
    jetstream: async (signal) => {
      await client(signal);
      return js!;
    },
    whenState: (s, signal) => state.whenState(s, signal),
    scrub: (text) => state.scrub(text),
    close: async () => {
      epoch++;
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = null;
      const closing = nc;
      nc = null;
      js = null;
      failedDials = 0;
      state.set('DISCONNECTED');
      await closing?.close().catch(() => {});
    },
  };
}
