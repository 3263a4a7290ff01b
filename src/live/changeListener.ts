// The process's one LISTEN connection, behind a small interface so pg-listen can be replaced.
//
// Lifecycle: stopped → start() → connecting → connected ⇄ reconnecting → stop() → stopped.
//  - connecting: the first connect is retried here with capped backoff + jitter (pg-listen's own
//    first connect() just rejects, pg-listen#32).
//  - connected: LISTEN is active; onConnected fires (first connect and every reconnect), because
//    notifications sent while disconnected are lost and the feed must catch up by cursor.
//  - reconnecting: pg-listen retries forever (retryTimeout Infinity; its default gives up after
//    3 s for good, pg-listen#56). A half-open socket is noticed by the paranoid check (every
//    7.5 s, with a 5 s query_timeout), so within 12.5 s, and replaced within 15 s
//    (test/faults/feedHalfOpen.fault.test.ts: a 10 s check measured 15.1 s in the worst phase).
//  - pg-listen's terminal `error` (a re-LISTEN failed) is logged and the subscriber is rebuilt.
//  - reconnect() rebuilds it on request (the heartbeat in listenerHealth.ts found LISTEN dead).
// Besides the changes channel the session LISTENs on a channel of its own process (probeChannel),
// which listenerHealth.ts NOTIFYs from another session to prove notifications still arrive, and on
// lazarus_alerts, a bare wake-up for the alert deliverer (its payload is never read).
// Payloads are parsed by parseHint, which never throws: forged or garbage NOTIFYs are logged
// and dropped here.
import { randomBytes } from 'node:crypto';
import pgListen, { type Subscriber } from 'pg-listen';
import type { Logger } from '../logger.ts';
import { createOutageLog, type OutageLog } from '../db/outageLog.ts';
import { ALERTS_CHANNEL, CHANGES_CHANNEL } from './channels.ts';
import { parseHint, type ChangeHint } from './parseHint.ts';

export interface ChangeListener {
  /** Resolves once LISTEN is active for the first time (retrying until then). */
  start(): Promise<void>;
  stop(): Promise<void>;
  isConnected(): boolean;
  onHint(handler: (hint: ChangeHint) => void): void;
  onConnected(handler: () => void): void;
  /** A transaction that raised alerts committed (channel lazarus_alerts; the payload is ignored). */
  onAlertsRaised(handler: () => void): void;
  /** This process's own channel; its payloads go to onProbe handlers, never to onHint. */
  readonly probeChannel: string;
  onProbe(handler: (payload: string) => void): void;
  /** Drops the LISTEN session and connects a new one (onConnected fires again). */
  reconnect(reason: string): void;
  /** Times the LISTEN session was re-established after the first connect. */
  reconnects(): number;
}

export interface ChangeListenerOptions {
  url: string;
  logger: Logger;
  /** Shared with the service's other loops, so an outage is logged once; default: its own. */
  outage?: OutageLog;
  applicationName?: string;
  paranoidCheckMs?: number;
  queryTimeoutMs?: number;
  maxBackoffMs?: number;
  probeChannel?: string;
}

export const LISTENER_APPLICATION_NAME = 'lazarus-listener';
const DEFAULT_PARANOID_CHECK_MS = 7_500;
const DEFAULT_QUERY_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_BACKOFF_MS = 30_000;
const INVALID = Symbol('invalid');
// pg-listen is CommonJS with an `exports.default`.
const createPostgresSubscriber = pgListen.default;

export function backoffMs(attempt: number, maxMs: number, random: number): number {
  const base = Math.min(maxMs, 250 * 2 ** Math.min(attempt, 16));
  return Math.round(base / 2 + (base / 2) * random);
}

export function createChangeListener(options: ChangeListenerOptions): ChangeListener {
  const logger = options.logger.child({ component: 'listener' });
  const outage = options.outage ?? createOutageLog(logger);
  const maxBackoffMs = options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
  const hintHandlers: ((hint: ChangeHint) => void)[] = [];
  const connectedHandlers: (() => void)[] = [];
  const probeHandlers: ((payload: string) => void)[] = [];
  const alertHandlers: (() => void)[] = [];
  const probeChannel = options.probeChannel ?? `lazarus_probe_${randomBytes(8).toString('hex')}`;
  let subscriber: Subscriber | null = null;
  let connected = false;
  let stopped = true;
  let reconnects = 0;

  const emit = <A extends unknown[]>(handlers: ((...args: A) => void)[], ...args: A) => {
    for (const handler of handlers) {
      try {
        handler(...args);
      } catch (error) {
        logger.error({ err: error }, 'listener handler failed');
      }
    }
  };

  const build = (): Subscriber => {
    const sub = createPostgresSubscriber(
      {
        connectionString: options.url,
        application_name: options.applicationName ?? LISTENER_APPLICATION_NAME,
        query_timeout: options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS,
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
      },
      {
        retryTimeout: Infinity,
        retryLimit: Infinity,
        retryInterval: (attempt) => backoffMs(attempt, maxBackoffMs, Math.random()),
        paranoidChecking: options.paranoidCheckMs ?? DEFAULT_PARANOID_CHECK_MS,
        parse: (raw: string) => parseHint(raw) ?? { [INVALID]: raw },
      },
    );
    sub.events.on('notification', ({ channel, payload }) => {
      if (channel === probeChannel) {
        const raw = (payload as Record<symbol, unknown> | undefined)?.[INVALID];
        if (typeof raw === 'string') emit(probeHandlers, raw);
        return;
      }
      if (channel === ALERTS_CHANNEL) return emit(alertHandlers);
      if (channel !== CHANGES_CHANNEL) return;
      if (!payload || (payload as Record<symbol, unknown>)[INVALID] !== undefined) {
        const raw = String((payload as Record<symbol, unknown> | undefined)?.[INVALID] ?? '');
        logger.warn({ channel, payload: raw.slice(0, 200) }, 'ignored a NOTIFY that is not a change hint');
        return;
      }
      emit(hintHandlers, payload as ChangeHint);
    });
    sub.events.on('reconnect', (attempt) => {
      if (connected) logger.warn('LISTEN connection lost; reconnecting');
      connected = false;
      // pg-listen says only that an attempt failed, not why; an outage is already being logged.
      if (attempt === 2) logger.warn({ attempt }, 'LISTEN reconnect attempts are failing; retrying with backoff until one succeeds');
    });
    sub.events.on('connected', () => {
      // The first connect emits before LISTEN is sent; start() reports that one itself.
      if (stopped || sub.getSubscribedChannels().length === 0) return;
      reconnects += 1;
      connected = true;
      outage.answered();
      logger.info({ reconnects }, 'LISTEN connection re-established');
      emit(connectedHandlers);
    });
    sub.events.on('error', (error) => {
      connected = false;
      logger.error({ err: error }, 'LISTEN connection failed for good; rebuilding it');
      void sub.close().catch(() => {});
      if (subscriber === sub && !stopped) void connectWithRetry();
    });
    return sub;
  };

  const connectWithRetry = async (): Promise<void> => {
    for (let attempt = 0; !stopped; attempt++) {
      const sub = build();
      subscriber = sub;
      try {
        await sub.connect();
        await sub.listenTo(CHANGES_CHANNEL);
        await sub.listenTo(probeChannel);
        await sub.listenTo(ALERTS_CHANNEL);
        if (stopped) return;
        connected = true;
        logger.info({ channel: CHANGES_CHANNEL }, 'listening for changes');
        emit(connectedHandlers);
        return;
      } catch (error) {
        subscriber = null;
        await sub.close().catch(() => {});
        const delayMs = backoffMs(attempt, maxBackoffMs, Math.random());
        logger.warn({ err: error, attempt, delayMs }, 'cannot LISTEN yet; retrying');
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  };

  return {
    async start() {
      stopped = false;
      await connectWithRetry();
    },
    async stop() {
      stopped = true;
      connected = false;
      const sub = subscriber;
      subscriber = null;
      await sub?.close().catch(() => {});
    },
    isConnected: () => connected,
    probeChannel,
    onProbe: (handler) => void probeHandlers.push(handler),
    reconnect(reason) {
      if (stopped) return;
      logger.warn({ reason }, 'dropping the LISTEN connection and connecting a new one');
      connected = false;
      const sub = subscriber;
      subscriber = null;
      void sub?.close().catch(() => {});
      reconnects += 1;
      void connectWithRetry();
    },
    reconnects: () => reconnects,
    onHint: (handler) => void hintHandlers.push(handler),
    onConnected: (handler) => void connectedHandlers.push(handler),
    onAlertsRaised: (handler) => void alertHandlers.push(handler),
  };
}
