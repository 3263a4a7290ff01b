// Proves that notifications actually reach the LISTEN session, instead of trusting that an open
// socket means they do (docs: research/reliability.md A7, B2).
//
// A probe NOTIFYs the listener's own probe channel from another session (the API pool, the path
// every writer's NOTIFY takes) and waits for it on the LISTEN session. It runs once at start-up
// (the self-probe) and then every `intervalMs` (the heartbeat):
//  - probe arrives: state `ok`; the feed polls at its normal fallback rate.
//  - probe lost after the previous one arrived: the session may be half-open or have lost its
//    LISTEN (pg-boss#851), so the listener is dropped and reconnected (it then catches up).
//  - probe lost at start-up or twice in a row: notifications do not work here (PgBouncer in
//    transaction mode, a replica); state `degraded`, and the feed polls every `degradedPollMs`
//    (never less often than `normalPollMs`) so subscribers still get every change, later. Probing continues and recovers from it.
// pg-listen does not expose its client, so `pg_listening_channels()` cannot be read on that
// session; a NOTIFY that comes back proves more (the LISTEN exists and delivery works end to end).
import { randomBytes } from 'node:crypto';
import type { Logger } from '../logger.ts';
import { startPeriodic, type Periodic } from '../runtime/periodic.ts';
import type { ChangeListener } from './changeListener.ts';

export type ListenerState = 'starting' | 'ok' | 'disconnected' | 'degraded';

export const DEFAULT_HEARTBEAT_MS = 10_000;
export const DEFAULT_PROBE_TIMEOUT_MS = 5_000;
export const DEFAULT_DEGRADED_POLL_MS = 250;

export interface ListenerHealthDeps {
  listener: ChangeListener;
  /** Sends NOTIFY channel, payload from a session other than the listener's. */
  notify: (channel: string, payload: string) => Promise<void>;
  feed: { setFallbackPollMs(ms: number): void };
  logger: Logger;
  normalPollMs: number;
  intervalMs?: number;
  timeoutMs?: number;
  degradedPollMs?: number;
}

export interface ListenerHealth {
  /** Runs the start-up self-probe (bounded by timeoutMs), then the heartbeat. */
  start(): Promise<void>;
  stop(): Promise<void>;
  state(): ListenerState;
  stats(): { probes: number; probeFailures: number; forcedReconnects: number };
}

export function createListenerHealth(deps: ListenerHealthDeps): ListenerHealth {
  const logger = deps.logger.child({ component: 'listenerHealth' });
  const timeoutMs = deps.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const waiting = new Map<string, () => void>();
  let degraded = false;
  let lastOk = false;
  let started = false;
  let stopped = false;
  let heartbeat: Periodic | undefined;
  const stats = { probes: 0, probeFailures: 0, forcedReconnects: 0 };

  deps.listener.onProbe((payload) => waiting.get(payload)?.());

  const probe = async (): Promise<boolean> => {
    stats.probes += 1;
    const token = randomBytes(8).toString('hex');
    let timeout: NodeJS.Timeout | undefined;
    const arrived = new Promise<boolean>((resolve) => {
      waiting.set(token, () => resolve(true));
      timeout = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      await deps.notify(deps.listener.probeChannel, token);
      return await arrived;
    } catch (error) {
      logger.warn({ err: error }, 'sending the listener probe failed');
      return false;
    } finally {
      clearTimeout(timeout);
      waiting.delete(token);
    }
  };

  // Degraded, the feed polls at least as often as it does normally (LIVE_POLL_MS may be lower).
  const degradedPollMs = Math.min(deps.degradedPollMs ?? DEFAULT_DEGRADED_POLL_MS, deps.normalPollMs);
  const setDegraded = (value: boolean) => {
    if (value === degraded) return;
    degraded = value;
    deps.feed.setFallbackPollMs(value ? degradedPollMs : deps.normalPollMs);
    if (value) logger.error({ pollMs: degradedPollMs }, 'NOTIFY does not reach the listener; the change feed falls back to polling');
    else logger.info('NOTIFY reaches the listener again; the change feed is event-driven again');
  };

  const check = async (): Promise<void> => {
    // While pg-listen reconnects there is no session to probe; its reconnect catches up.
    if (!deps.listener.isConnected()) return;
    const ok = await probe();
    if (stopped) return;
    if (ok) setDegraded(false);
    else {
      stats.probeFailures += 1;
      if (lastOk && deps.listener.isConnected()) {
        stats.forcedReconnects += 1;
        deps.listener.reconnect(`a probe NOTIFY did not come back within ${timeoutMs} ms`);
      } else setDegraded(true);
    }
    lastOk = ok;
  };

  return {
    async start() {
      await check();
      started = true;
      if (!stopped) heartbeat = startPeriodic({ name: 'listener heartbeat', everyMs: deps.intervalMs ?? DEFAULT_HEARTBEAT_MS, runOnce: check, logger });
    },
    async stop() {
      stopped = true;
      await heartbeat?.stop();
    },
    state() {
      if (!started) return 'starting';
      if (!deps.listener.isConnected()) return 'disconnected';
      return degraded ? 'degraded' : 'ok';
    },
    stats: () => ({ ...stats }),
  };
}
