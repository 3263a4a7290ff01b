// Shared AMQP (RabbitMQ) connections: one connection per distinct URL (and SSRF mode), opened on
// first use and reused by every policy and bridge that names it, with one confirm channel for
// publishers and extra channels on demand (a bridge's consumer).
//
// States of a connection: CONNECTING → CONNECTED → (the socket or the broker closes it) →
// DISCONNECTED → (a timer, exponential backoff with jitter) → CONNECTING … A failed attempt doubles
// the delay, up to maxMs; a success resets it. While a failed attempt's delay runs, callers are
// refused at once (AmqpUnreachableError) rather than each opening a socket to a broker that is
// down; after a connection that worked is lost, the first caller may reconnect at once. A connection
// nobody asked for in idleMs stops reconnecting and is forgotten (a policy moved elsewhere).
// A channel closed by the broker (a publish to a missing exchange) is reopened by the next caller.
//
// Credentials: the URL carries them. Errors and health name host and vhost only, and every message
// passes through `redact`, which removes the URL's user and password in any spelling.
// State and last error are a ConnectionState, as the NATS and Redis pools keep theirs; the backoff
// is this file's own (equal jitter, 0.5 s doubling to 30 s, and refusal while its delay runs),
// because amqplib, unlike the NATS and Redis clients, does not reconnect by itself.
import { connect, type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { LookupFunction } from 'node:net';
import type { Writable } from 'node:stream';
import { abortable, ConnectionState, type ConnectionStateName } from './connectionState.ts';

export type AmqpConnectionState = ConnectionStateName;

export interface AmqpConnectionHealth {
  /** `host:port`, never a user name or password. */
  host: string;
  vhost: string;
  state: AmqpConnectionState;
  /** The last connection or channel error, credentials removed; null once connected again. */
  lastError: string | null;
  lastErrorAt: Date | null;
}

export interface AmqpChannelOptions {
  /** Gives up waiting (the caller's timeout or shutdown); the connection attempt itself goes on. */
  signal?: AbortSignal;
  /**
   * Resolves the host with this lookup (the webhook's public-only one, for a policy without
   * allowPrivateTarget). Connections are shared per URL and lookup, so a private and a public-only
   * use of one URL never share a socket.
   */
  lookup?: LookupFunction;
}

/** A connection that could not be opened or is waiting to reconnect; `cause` is the driver's error. */
export class AmqpUnreachableError extends Error {
  override name = 'AmqpUnreachableError';
}

export interface AmqpConnections {
  /** The connection's shared confirm channel, opening the connection and channel when needed. */
  confirmChannel(url: string, options?: AmqpChannelOptions): Promise<ConfirmChannel>;
  /** A new channel on the shared connection, owned by the caller (close it when done). */
  openChannel(url: string, options?: AmqpChannelOptions): Promise<Channel>;
  /**
   * Calls `listener` after each (re)connect of url's connection, and keeps it reconnecting while
   * the listener is registered (a bridge re-declares its consumer there). Returns the unsubscribe.
   */
  onConnect(url: string, listener: (model: ChannelModel) => void, options?: Pick<AmqpChannelOptions, 'lookup'>): () => void;
  health(): AmqpConnectionHealth[];
  /** Closes every connection; the next call opens them again. */
  close(): Promise<void>;
}

export interface AmqpConnectionsOptions {
  /** First reconnect delay; default 500 ms. */
  initialDelayMs?: number;
  /** Longest reconnect delay; default 30 s. */
  maxDelayMs?: number;
  /** Socket connect and handshake timeout; default 10 s. */
  connectTimeoutMs?: number;
  /** A connection unused this long stops reconnecting and is dropped; default 10 min. */
  idleMs?: number;
  random?: () => number;
}

export const DEFAULT_AMQP_INITIAL_DELAY_MS = 500;
export const DEFAULT_AMQP_MAX_DELAY_MS = 30_000;
export const DEFAULT_AMQP_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_AMQP_IDLE_MS = 10 * 60_000;

interface Entry {
  url: string;
  lookup: LookupFunction | undefined;
  host: string;
  vhost: string;
  /** State and last error (already redacted). */
  status: ConnectionState;
  model: ChannelModel | null;
  opening: Promise<ChannelModel> | null;
  confirm: Promise<ConfirmChannel> | null;
  /** Failed attempts in a row; 0 after a success. */
  failures: number;
  timer: NodeJS.Timeout | null;
  lastUsedMs: number;
  listeners: Set<(model: ChannelModel) => void>;
  /** Set while close() runs, so the close it causes is not a loss to reconnect from. */
  isClosing: boolean;
}

/** Host (with port) and vhost of an amqp(s) URL, as amqplib reads them; null when it does not parse. */
export function amqpAddress(url: string): { host: string; vhost: string } | null {
  const parsed = URL.parse(url);
  if (!parsed || (parsed.protocol !== 'amqp:' && parsed.protocol !== 'amqps:') || !parsed.hostname) return null;
  const path = parsed.pathname.slice(1);
  let vhost = '/';
  try {
    if (path) vhost = decodeURIComponent(path);
  } catch {
    return null;
  }
  return { host: parsed.host, vhost };
}

/** `text` without the URL's user name and password, raw or percent-decoded. */
export function redact(text: string, url: string): string {
  const parsed = URL.parse(url);
  if (!parsed) return text;
  const secrets = [parsed.password, parsed.username].filter(Boolean).flatMap((s) => {
    try {
      return [s, decodeURIComponent(s)];
    } catch {
      return [s];
    }
  });
  let out = text.replaceAll(url, `${parsed.protocol}//${parsed.host}${parsed.pathname}`);
  for (const secret of secrets.sort((a, b) => b.length - a.length)) out = out.replaceAll(secret, '***');
  return out;
}

export function createAmqpConnections(options: AmqpConnectionsOptions = {}): AmqpConnections {
  const initialDelayMs = options.initialDelayMs ?? DEFAULT_AMQP_INITIAL_DELAY_MS;
  const maxDelayMs = options.maxDelayMs ?? DEFAULT_AMQP_MAX_DELAY_MS;
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_AMQP_CONNECT_TIMEOUT_MS;
  const idleMs = options.idleMs ?? DEFAULT_AMQP_IDLE_MS;
  const random = options.random ?? Math.random;
  const entries = new Map<string, Entry>();
  // Lookups are functions: give each a number so it can be part of the key.
  const lookupIds = new Map<LookupFunction, number>();

  const entryFor = (url: string, lookup: LookupFunction | undefined): Entry => {
    if (lookup && !lookupIds.has(lookup)) lookupIds.set(lookup, lookupIds.size + 1);
    const key = `${lookup ? lookupIds.get(lookup) : 0} ${url}`;
    let entry = entries.get(key);
    if (!entry) {
      const address = amqpAddress(url);
      if (!address) throw new AmqpUnreachableError('not an amqp:// or amqps:// URL');
      entry = {
        url, lookup, ...address, status: new ConnectionState(address.host, []), model: null, opening: null, confirm: null,
        failures: 0, timer: null, lastUsedMs: Date.now(), listeners: new Set(), isClosing: false,
      };
      entries.set(key, entry);
    }
    entry.lastUsedMs = Date.now();
    return entry;
  };

  const note = (entry: Entry, error: unknown, state?: AmqpConnectionState) => entry.status.fail(redact(messageOf(error), entry.url), state);

  const schedule = (entry: Entry) => {
    if (entry.timer) clearTimeout(entry.timer);
    // Equal jitter: half the exponential step is fixed, half random, so instances spread out.
    const step = Math.min(maxDelayMs, initialDelayMs * 2 ** Math.max(0, entry.failures - 1));
    entry.timer = setTimeout(() => {
      entry.timer = null;
      if (entry.listeners.size === 0 && Date.now() - entry.lastUsedMs > idleMs) {
        for (const [key, e] of entries) if (e === entry) entries.delete(key);
        return;
      }
      open(entry).catch(() => {}); // recorded on the entry; the next failure schedules the next try
    }, step / 2 + random() * (step / 2));
    entry.timer.unref();
  };

  const open = (entry: Entry): Promise<ChannelModel> => {
    if (entry.model) return Promise.resolve(entry.model);
    if (entry.opening) return entry.opening;
    if (entry.timer && entry.failures > 0) {
      return Promise.reject(new AmqpUnreachableError(`${entry.host} is unreachable (${entry.status.health().lastError}); reconnecting with backoff`));
    }
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = null;
    entry.status.set('CONNECTING');
    // noDelay: amqplib leaves Nagle's algorithm on, which holds a publish or an ack back while an
    // earlier segment is unacknowledged; every frame Lazarus sends is one somebody waits on.
    const attempt = connect(entry.url, {
      timeout: connectTimeoutMs, noDelay: true, clientProperties: { connection_name: 'lazarus' }, ...(entry.lookup && { lookup: entry.lookup }),
    });
    entry.opening = attempt.then(
      (model) => {
        entry.opening = null;
        entry.model = model;
        coalesceWrites(model);
        entry.status.set('CONNECTED');
        entry.failures = 0;
        model.on('error', (error: Error) => note(entry, error));
        model.on('close', (error?: Error) => {
          if (entry.model !== model) return;
          entry.model = null;
          entry.confirm = null;
          if (error) note(entry, error);
          entry.status.set('DISCONNECTED');
          if (!entry.isClosing) schedule(entry);
        });
        for (const listener of entry.listeners) listener(model);
        return model;
      },
      (error: unknown) => {
        entry.opening = null;
        entry.failures++;
        const message = note(entry, error, 'DISCONNECTED');
        if (!entry.isClosing) schedule(entry);
        throw new AmqpUnreachableError(`${entry.host}: ${message}`, { cause: error });
      },
    );
    return entry.opening;
  };

  const openConfirm = (entry: Entry): Promise<ConfirmChannel> => {
    if (entry.confirm) return entry.confirm;
    const pending: Promise<ConfirmChannel> = open(entry).then(async (model) => {
      const channel = await model.createConfirmChannel().catch((error: unknown) => {
        throw new AmqpUnreachableError(`${entry.host}: ${note(entry, error)}`, { cause: error });
      });
      channel.on('error', (error: Error) => note(entry, error));
      channel.on('close', () => {
        if (entry.confirm === pending) entry.confirm = null;
      });
      return channel;
    });
    entry.confirm = pending;
    pending.catch(() => {
      if (entry.confirm === pending) entry.confirm = null;
    });
    return pending;
  };

  return {
    confirmChannel: (url, options = {}) => {
      try {
        return abortable(openConfirm(entryFor(url, options.lookup)), options.signal);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    openChannel: async (url, options = {}) => {
      const entry = entryFor(url, options.lookup);
      const model = await abortable(open(entry), options.signal);
      const channel = await model.createChannel();
      channel.on('error', (error: Error) => note(entry, error));
      return channel;
    },
    onConnect: (url, listener, options = {}) => {
      const entry = entryFor(url, options.lookup);
      entry.listeners.add(listener);
      if (entry.model) listener(entry.model);
      else open(entry).catch(() => {});
      return () => {
        entry.listeners.delete(listener);
      };
    },
    health: () => [...entries.values()].map((e) => {
      const { state, lastError, lastErrorAt } = e.status.health();
      return { host: e.host, vhost: e.vhost, state, lastError, lastErrorAt };
    }),
    close: async () => {
      await Promise.all([...entries.values()].map(async (entry) => {
        entry.isClosing = true;
        if (entry.timer) clearTimeout(entry.timer);
        entry.timer = null;
        try {
          await entry.opening?.catch(() => {});
          const model = entry.model;
          entry.model = null;
          entry.confirm = null;
          await model?.close().catch(() => {});
        } finally {
          entry.status.set('DISCONNECTED');
          entry.failures = 0;
          entry.isClosing = false;
        }
      }));
    },
  };
}

function messageOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.map(messageOf).join('; ');
  if (error instanceof Error) return error.message || (error as { code?: string }).code || error.name;
  return String(error);
}

/**
 * amqplib's muxer hands the socket one frame per `write()` (a publish, an ack), each a system call
 * and, with Nagle off, a TCP segment of its own. Frames queued in one turn of the event loop (the
 * publishes a batch of confirms releases, a bridge's acks) leave in one `writev` instead: the socket
 * is corked while the muxer writes what it holds. About 10% more events a second in a RabbitMQ
 * redrive (bench:broker:amqp). The muxer is amqplib's own (2.x); where it is not found, writes are
 * left as they are.
 */
function coalesceWrites(model: ChannelModel): void {
  const muxer = (model.connection as unknown as { muxer?: { _readIncoming?: () => void; out?: Writable } }).muxer;
  const readIncoming = muxer?._readIncoming;
  const out = muxer?.out;
  if (typeof readIncoming !== 'function' || typeof out?.cork !== 'function') return;
  muxer!._readIncoming = function corked(this: unknown) {
    out.cork();
    try {
      readIncoming.call(this);
    } finally {
      out.uncork();
    }
  };
}
