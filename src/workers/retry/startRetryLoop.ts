// The retry loop: the work loop (runtime/workLoop.ts) running retry passes. Passes run back to back
// while batches come back full, otherwise one per poll interval, wake-up (the change feed's hint, at
// most one per 50 ms) or the moment the earliest waiting event becomes due (asked of the database
// after a pass that left the queue empty, or told by the pass that scheduled the retry), whichever
// comes first. NOTIFY is only a hint: the timer alone keeps events moving. The next pass claims as
// soon as the last one's claim returns (claim ahead, below), so a slow delivery at a batch's end
// holds one slot, not the loop, and the target never waits for a claim.
//
// States: RUNNING → (stop()) DRAINING → STOPPED.
//  RUNNING   runs passes; a failed pass is logged and emitted as `passFailed`, then it waits.
//  DRAINING  no new claims and no new deliveries; in-flight ones get `shutdownTimeoutMs` to
//            finish, then they are aborted and their events released (attempt refunded).
//  STOPPED   stop() has resolved; the wake subscription is gone.
// Retention is a job of its own (workers/jobs.ts), so it runs with the loop disabled too.
// Events: `passCompleted` (RetryPassSummary) after every pass, `passFailed` (error).
import type { EventEmitter } from 'node:events';
import type { Db } from '../../db/createDb.ts';
import { createOutageLog, type OutageLog } from '../../db/outageLog.ts';
import { msUntilNextDue } from '../../db/sql/claimDueDeadLetters.ts';
import { startWorkLoop, type PassSignals } from '../../runtime/workLoop.ts';
import type { Logger } from '../../logger.ts';
import type { Deliver } from './delivery.ts';
import type { RetryMetrics } from './metrics.ts';
import { runRetryPass, type RetryPassConfig } from './runRetryPass.ts';
import { createSlots } from './slots.ts';

export interface RetryLoopConfig extends RetryPassConfig {
  pollIntervalMs: number;
  shutdownTimeoutMs: number;
  /**
   * Claim the next batch as soon as the last claim returns, while that batch delivers, instead of
   * once every event of it has started and a delivery slot is free. Default true; false is the
   * off switch (RETRY_CLAIM_AHEAD=false).
   */
  claimAhead?: boolean;
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
  /** Emits `passCompleted` and `passFailed`. */
  readonly events: EventEmitter;
  /** Wakes the loop now instead of at the next poll. */
  poke(): void;
  stop(): Promise<void>;
}

const WAKE_MIN_GAP_MS = 50;

export function startRetryLoop(deps: RetryLoopDeps): RetryLoop {
  const { config } = deps;
  const isClaimingAhead = config.claimAhead ?? true;
  // Passes overlap; the slots keep the process's deliveries within `concurrency`.
  //  * Claim ahead (the default): the next pass claims as soon as the last claim returns, so its
  //    batch is ready when the last one's slots free up and the target never waits for a claim.
  //    At most two passes deliver at once (one running, one waiting for its slots) and a third may
  //    be writing its last outcomes; a pass claims only while deliveries are finishing (one
  //    finished since the last claim began, or a slot is free), so once every slot is stuck on a
  //    hung receiver the claims stop and another process may deliver what is left. A worker keeps
  //    its slot from event to event (runRetryPass), so the older pass ends first.
  //  * Off (the switch): the next pass claims once every event of the last one has started
  //    delivering and a slot is free, with two passes alive at most; the slots empty while that
  //    claim runs: 7.5–7.9 of 10 busy redriving to RabbitMQ, 3.6 to JetStream (bench:broker:amqp
  //    and :nats).
  const slots = createSlots(config.concurrency);
  deps.metrics?.readInFlightFrom(() => slots.inUse);
  let delivered = 0;
  let deliveredAtLastClaim = 0;
  let passesDelivering = 0;
  let onProgress: (() => void) | null = null;
  const onDelivered = () => {
    delivered += 1;
    onProgress?.();
  };
  const isClaimable = () => passesDelivering < 2 && (delivered > deliveredAtLastClaim || slots.inUse < config.concurrency);
  const whenClaimable = (drain: AbortSignal) => new Promise<void>((resolve) => {
    const check = () => {
      if (!drain.aborted && !isClaimable()) return;
      onProgress = null;
      drain.removeEventListener('abort', check);
      resolve();
    };
    onProgress = check;
    drain.addEventListener('abort', check, { once: true });
    check();
  });
  const runAhead = (signals: PassSignals) => {
    passesDelivering += 1;
    let isDone = false;
    const deliveriesDone = () => {
      if (isDone) return;
      isDone = true;
      passesDelivering -= 1;
      onProgress?.();
    };
    return runRetryPass({ ...passDeps(signals), onClaimed: signals.handOff, onDeliveriesDone: deliveriesDone }).finally(deliveriesDone);
  };
  const passDeps = ({ drain, abort }: PassSignals) => {
    deliveredAtLastClaim = delivered;
    return {
      ...deps, slots, drainSignal: drain, abortSignal: abort, onDelivered,
      onRetryScheduled: (delayMs: number) => loop.dueBy(Date.now() + delayMs),
    };
  };
  const loop = startWorkLoop({
    name: 'retry',
    batchSize: config.batchSize,
    pollIntervalMs: config.pollIntervalMs,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    report: deps.outage ?? createOutageLog(deps.logger),
    ...(deps.wake && { wake: deps.wake }),
    wakeGapMs: WAKE_MIN_GAP_MS,
    maxPassesAlive: isClaimingAhead ? 3 : 2,
    msUntilNextDue: () => msUntilNextDue(deps.db, deps.inProcessEventTypes ?? []),
    // Claim no more while every slot is busy (a hung receiver): another process may deliver them.
    readyToClaim: async (drain) => {
      if (isClaimingAhead) return whenClaimable(drain);
      if (await slots.acquire(drain)) slots.release();
    },
    runPass: (signals) => (isClaimingAhead ? runAhead(signals) : runRetryPass({ ...passDeps(signals), onAllStarted: signals.handOff })),
  });
  return loop;
}
