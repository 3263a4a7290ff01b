// The retry loop: passes back to back while batches come back full, otherwise one pass per poll
// interval, wake-up (the change feed's hint, at most one per 50 ms) or the moment the earliest
// waiting event becomes due (asked of the database after a pass that left the queue empty),
// whichever comes first.
// NOTIFY is only a hint: the timer alone keeps events moving. The next pass starts as soon as
// every event of the last one has started delivering, so a slow delivery at a batch's end holds
// one slot, not the loop.
//
// States: RUNNING → (stop()) DRAINING → STOPPED.
//  RUNNING   runs passes; a failed pass is logged and emitted as `passFailed`, then it waits.
//  DRAINING  no new claims and no new deliveries; in-flight ones get `shutdownTimeoutMs` to
//            finish, then they are aborted and their events released (attempt refunded).
//  STOPPED   stop() has resolved; the wake subscription is gone.
// Retention runs every `retentionIntervalMs`, guarded by an advisory lock, beside the passes: short
// purge batches, one after another, never hold up the next claim.
// Events: `passCompleted` (RetryPassSummary) after every pass, `passFailed` (error), `purged` (count).
import { EventEmitter } from 'node:events';
import type { Db } from '../../db/createDb.ts';
import { createOutageLog, type OutageLog } from '../../db/outageLog.ts';
import { msUntilNextDue } from '../../db/sql/claimDueDeadLetters.ts';
import { startPeriodic } from '../periodic.ts';
import { RETENTION_REST_RATIO, runRetentionPass } from '../retention.ts';
import type { Logger } from '../../logger.ts';
import type { Deliver } from './delivery.ts';
import type { RetryMetrics } from './metrics.ts';
import { runRetryPass, type RetryPassConfig } from './runRetryPass.ts';
import { createSlots } from './slots.ts';

export interface RetryLoopConfig extends RetryPassConfig {
  pollIntervalMs: number;
  shutdownTimeoutMs: number;
  /** Purge finished events older than this; null keeps them forever. */
  retentionMs: number | null;
  retentionIntervalMs: number;
}

export interface RetryLoopDeps {
  db: Db;
  deliver: Deliver;
  config: RetryLoopConfig;
  logger: Logger;
  inProcessEventTypes?: readonly string[];
  /** Subscribes to wake-up hints (e.g. the change feed); returns an unsubscribe function. */
  wake?: (fn: () => void) => () => void;
  random?: () => number;
  metrics?: RetryMetrics;
  /** Shared with the service's other loops, so an outage is logged once; default: this loop's own. */
  outage?: OutageLog;
}

export interface RetryLoop {
  /** Emits `passCompleted`, `passFailed` and `purged`. */
  readonly events: EventEmitter;
  /** Wakes the loop now instead of at the next poll. */
  poke(): void;
  stop(): Promise<void>;
}

const WAKE_MIN_GAP_MS = 50;
const MAX_PASSES_ALIVE = 2;

export function startRetryLoop(deps: RetryLoopDeps): RetryLoop {
  const { config, logger } = deps;
  const events = new EventEmitter();
  const outage = deps.outage ?? createOutageLog(logger);
  const drain = new AbortController();
  const abort = new AbortController();
  let wakeUp: () => void = () => {};
  // A hint (from `wake`) may start a pass at most every WAKE_MIN_GAP_MS after the previous one
  // began: at a thousand inserts a second the hints would otherwise run a pass each, and a pass
  // that finds nothing deliverable is pure load on the database. poke() is not held back.
  let hinted = false;
  let poked = false;
  let lastPassAt = 0;
  const onHint = () => {
    hinted = true;
    wakeUp();
  };
  const poke = () => {
    poked = true;
    wakeUp();
  };
  const unsubscribe = deps.wake?.(onHint) ?? (() => {});

  // The earliest moment (this process's clock) a retry this loop scheduled becomes due. A pass
  // hands off before its failures are written, so the database cannot be asked yet; the pass
  // tells the loop instead, and a wait in progress is shortened.
  let retryDueAt = Infinity;
  let rearm: (() => void) | null = null;
  const onRetryScheduled = (delayMs: number) => {
    retryDueAt = Math.min(retryDueAt, Date.now() + delayMs);
    rearm?.();
  };

  const waitForWork = (maxWaitMs: number) => new Promise<void>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let timerAt = Infinity;
    function done() {
      clearTimeout(timer);
      wakeUp = () => {};
      rearm = null;
      resolve();
    }
    /** Ends the wait at `at` unless it already ends sooner. */
    const endBy = (at: number) => {
      if (at >= timerAt) return;
      clearTimeout(timer);
      timerAt = at;
      timer = setTimeout(done, Math.max(0, at - Date.now()));
    };
    rearm = () => endBy(retryDueAt);
    wakeUp = () => {
      const wait = lastPassAt + WAKE_MIN_GAP_MS - Date.now();
      if (poked || drain.signal.aborted || wait <= 0) return done();
      endBy(Date.now() + wait);
    };
    endBy(Math.min(Date.now() + maxWaitMs, retryDueAt));
    if (poked || hinted || drain.signal.aborted) wakeUp();
  });

  // Passes overlap: once every event a pass claimed has started delivering, the next pass may
  // claim while the first one's last deliveries and its completion write finish, provided a slot
  // is free. The slots keep the process's deliveries within `concurrency`; at most
  // MAX_PASSES_ALIVE passes hold claims.
  const slots = createSlots(config.concurrency);
  deps.metrics?.readInFlightFrom(() => slots.inUse);
  const alive = new Set<Promise<void>>();
  const startPass = () => new Promise<number | null>((handOff) => {
    const pass = (async () => {
      try {
        const summary = await runRetryPass({ ...deps, slots, onRetryScheduled, onAllStarted: handOff, drainSignal: drain.signal, abortSignal: abort.signal });
        outage.answered();
        events.emit('passCompleted', summary);
        handOff(summary.claimed);
      } catch (error) {
        outage.failed(error, 'retry pass failed; retrying after the poll interval');
        events.emit('passFailed', error);
        handOff(null);
      }
    })();
    alive.add(pass);
    void pass.finally(() => alive.delete(pass));
  });

  // Retention, beside the passes: short purge batches with rests between them, every retentionIntervalMs.
  const retentionMs = config.retentionMs;
  const retention =
    retentionMs === null
      ? null
      : startPeriodic({
          name: 'retention',
          everyMs: config.retentionIntervalMs,
          immediately: true,
          logger,
          onError: (error) => outage.failed(error, 'retention purge failed'),
          runOnce: (signal) => runRetentionPass(deps.db, {
            olderThanMs: retentionMs,
            restRatio: RETENTION_REST_RATIO,
            signal: AbortSignal.any([signal, drain.signal]),
            onBatch: (purged) => events.emit('purged', purged),
          }),
        });

  const running = (async () => {
    while (!drain.signal.aborted) {
      hinted = false;
      poked = false;
      lastPassAt = Date.now();
      if (retryDueAt <= lastPassAt) retryDueAt = Infinity;
      const claimed = await startPass();
      while (alive.size >= MAX_PASSES_ALIVE) await Promise.race(alive);
      // Claim no more while every slot is busy (a hung receiver): another process may deliver them.
      if (await slots.acquire(drain.signal)) slots.release();
      if (claimed !== config.batchSize) await waitForWork(await nextWaitMs());
    }
    while (alive.size > 0) await Promise.race(alive);
    await retention?.stop();
  })();

  /** The poll interval, or less when a waiting event becomes due sooner. */
  async function nextWaitMs(): Promise<number> {
    const dueInMs = await msUntilNextDue(deps.db, deps.inProcessEventTypes ?? []).catch((error: unknown) => {
      outage.failed(error, 'reading when the next event is due failed; waiting the poll interval');
      return null;
    });
    return dueInMs === null ? config.pollIntervalMs : Math.max(0, Math.min(config.pollIntervalMs, dueInMs));
  }

  return {
    events,
    poke,
    async stop() {
      if (!drain.signal.aborted) {
        unsubscribe();
        drain.abort();
        wakeUp();
      }
      const force = setTimeout(() => abort.abort(), config.shutdownTimeoutMs);
      try {
        await running;
      } finally {
        clearTimeout(force);
      }
    },
  };
}
