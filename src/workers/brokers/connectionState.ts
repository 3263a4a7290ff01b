// What the broker connection pools (amqpConnections.ts, natsConnections.ts, redisConnections.ts)
// share: a connection's health as /metrics, GraphQL and the console show it, an awaitable state
// change, and the scrubbing of credentials out of every error text they keep.
//
// States: CONNECTING (the first connect, or a reconnect after close) → CONNECTED ⇄ DISCONNECTED
// (lost; the client reconnects with backoff) → … ; close() leaves it DISCONNECTED until the next use.
import { EventEmitter, once } from 'node:events';

export type ConnectionStateName = 'CONNECTED' | 'CONNECTING' | 'DISCONNECTED';

export interface ConnectionHealth {
  /** Host(s) and port only: never a user name, password or token. */
  target: string;
  state: ConnectionStateName;
  /** The last connection error, without credentials; null once connected again. */
  lastError: string | null;
  lastErrorAt: Date | null;
}

/** A connection that cannot be used now: the broker is down, refused the connection, or is being reconnected to. */
export class BrokerUnreachableError extends Error {
  override name = 'BrokerUnreachableError';
}

/** First reconnect delay and cap of the pools' backoff (doubling, with up to 20% jitter). */
export const DEFAULT_RECONNECT_BASE_MS = 250;
export const DEFAULT_RECONNECT_MAX_MS = 10_000;

export interface ReconnectOptions {
  /** First delay before a reconnect; doubles each failed try. Default 250 ms. */
  reconnectBaseMs?: number;
  /** Longest delay between reconnect tries. Default 10 s. */
  reconnectMaxMs?: number;
}

/** The n-th (0-based) reconnect delay: base·2ⁿ capped, plus up to 20% jitter. */
export function reconnectDelayMs(n: number, options: ReconnectOptions, random = Math.random): number {
  const base = options.reconnectBaseMs ?? DEFAULT_RECONNECT_BASE_MS;
  const max = options.reconnectMaxMs ?? DEFAULT_RECONNECT_MAX_MS;
  const delay = Math.min(base * 2 ** Math.min(n, 30), max);
  return Math.round(delay * (1 + 0.2 * random()));
}

/** One connection's health, its changes as events, and the secrets its error texts must never show. */
export class ConnectionState {
  readonly #events = new EventEmitter();
  readonly #secrets: readonly string[];
  #health: ConnectionHealth;

  constructor(target: string, secrets: readonly string[]) {
    this.#secrets = secrets;
    this.#health = { target, state: 'DISCONNECTED', lastError: null, lastErrorAt: null };
  }

  health(): ConnectionHealth {
    return { ...this.#health };
  }

  get state(): ConnectionStateName {
    return this.#health.state;
  }

  /** Moves to `state` (CONNECTED clears the last error) and tells whoever awaits a change. */
  set(state: ConnectionStateName): void {
    const isChange = state !== this.#health.state;
    this.#health = { ...this.#health, state, ...(state === 'CONNECTED' && { lastError: null, lastErrorAt: null }) };
    if (isChange) this.#events.emit('state', state);
  }

  /** Records an error (scrubbed) and returns its text. */
  fail(error: unknown, state?: ConnectionStateName): string {
    const message = this.scrub(error instanceof Error ? error.message : String(error));
    this.#health = { ...this.#health, lastError: message, lastErrorAt: new Date() };
    if (state) this.set(state);
    return message;
  }

  /** The text with every credential of this connection replaced by `***`. */
  scrub(text: string): string {
    let clean = text;
    for (const secret of this.#secrets) if (secret) clean = clean.replaceAll(secret, '***');
    return clean;
  }

  /** Resolves when the state is `state` (at once if it is); rejects if `signal` aborts first. */
  async whenState(state: ConnectionStateName, signal?: AbortSignal): Promise<void> {
    while (this.#health.state !== state) await once(this.#events, 'state', { signal });
  }
}

/** The promise, or a rejection with the signal's reason once it aborts. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** A URL's user name or password as the client sends it: percent-decoded, or as written when it does not decode. */
export function decodeCredential(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
