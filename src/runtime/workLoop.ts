// The one claim → deliver → record → wait loop. The retry loop and the alert deliverer are two
// instances of it; a pass (`runPass`) claims under a lease, delivers and records each outcome, and
// the loop decides when the next pass runs:
//  - at once while passes come back full (`claimed === batchSize`);
//  - otherwise at the first of: poke(); a wake-up hint (e.g. NOTIFY), no sooner than `wakeGapMs`
//    after the last pass began; dueBy(at), for work this process scheduled and has not written yet;
//    the next due time the database reports (`msUntilNextDue`); `pollIntervalMs`.
// NOTIFY is only a hint: the timer alone keeps work moving.
// A pass may hand off early (`handOff(claimed)`, once every item it claimed has started): the next
// pass may then claim while its tail finishes, with at most `maxPassesAlive` passes alive at once,
// and only once `readyToClaim` resolves (e.g. a delivery slot is free).
//
// States: RUNNING → (stop()) DRAINING → STOPPED.
//  RUNNING   runs passes; a failed pass goes to the outage log and is emitted as `passFailed`,
//            then the loop waits as after an empty pass.
//  DRAINING  stop() ends the wait and starts no pass; `drain` is aborted (claim and start nothing
//            more), work in flight gets `shutdownTimeoutMs` to finish, then `abort` is aborted.
//  STOPPED   stop() has resolved: every pass has returned and the wake subscription is gone.
// Events: `passCompleted` (the pass's summary) after every pass, `passFailed` (error).
import { EventEmitter } from 'node:events';

export interface PassSignals {
  /** Aborted by stop(): claim and start nothing more. */
  drain: AbortSignal;
  /** Aborted `shutdownTimeoutMs` after stop(): give up the work in flight. */
  abort: AbortSignal;
  /** The next pass may begin now (every claimed item has started); `claimed` as in the summary. */
  handOff(claimed: number): void;
}

/** Where a loop reports a failed pass (and a good one after it); the service shares one for every loop. */
export interface PassReport {
  failed(error: unknown, message: string): void;
  answered(): void;
}

export interface WorkLoopOptions<S extends { claimed: number }> {
  /** Names the loop in the outage log: "<name> pass failed". */
  name: string;
  runPass(signals: PassSignals): Promise<S>;
  /** A full pass (this many claimed) is followed by the next one at once. */
  batchSize: number;
  /** The longest wait between passes. */
  pollIntervalMs: number;
  shutdownTimeoutMs: number;
  report: PassReport;
  /** Milliseconds until the earliest waiting item becomes due, null if none (asked after a short pass). */
  msUntilNextDue?: () => Promise<number | null>;
  /** Subscribes to wake-up hints; returns the unsubscribe. */
  wake?: (fn: () => void) => () => void;
  /** A hint starts a pass no sooner than this after the last one began; poke() is not held back. Default 0. */
  wakeGapMs?: number;
  /** Passes holding claims at once (see handOff). Default 1. */
  maxPassesAlive?: number;
  /** Resolves when the next pass may claim; called after every pass is handed off. */
  readyToClaim?: (drain: AbortSignal) => Promise<void>;
}

export interface WorkLoop {
  /** Emits `passCompleted` (the summary) and `passFailed` (error). */
  readonly events: EventEmitter;
  /** Wakes the loop now instead of at the next poll. */
  poke(): void;
  /** Ends the current or next wait by `at` (Date.now() clock) at the latest. */
  dueBy(at: number): void;
  stop(): Promise<void>;
}

export function startWorkLoop<S extends { claimed: number }>(o: WorkLoopOptions<S>): WorkLoop {
  const events = new EventEmitter();
  const drain = new AbortController();
  const abort = new AbortController();
  const gapMs = o.wakeGapMs ?? 0;
  const maxPassesAlive = o.maxPassesAlive ?? 1;
  let wakeUp: () => void = () => {};
  // A hint may start a pass at most every gapMs after the previous one began: at a thousand inserts a
  // second the hints would otherwise run a pass each, and a pass that finds nothing is pure load.
  let hinted = false;
  let poked = false;
  let lastPassAt = 0;
  const unsubscribe = o.wake?.(() => {
    hinted = true;
    wakeUp();
  }) ?? (() => {});
  const poke = () => {
    poked = true;
    wakeUp();
  };

  // The earliest moment (this process's clock) work this loop scheduled becomes due. A pass may hand
  // off before it has written its retries, so the database cannot be asked yet; the pass says so here.
  let dueAt = Infinity;
  let rearm: (() => void) | null = null;
  const dueBy = (at: number) => {
    dueAt = Math.min(dueAt, at);
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
    rearm = () => endBy(dueAt);
    wakeUp = () => {
      const wait = lastPassAt + gapMs - Date.now();
      if (poked || drain.signal.aborted || wait <= 0) return done();
      endBy(Date.now() + wait);
    };
    endBy(Math.min(Date.now() + maxWaitMs, dueAt));
    if (poked || hinted || drain.signal.aborted) wakeUp();
  });

  const alive = new Set<Promise<void>>();
  /** Starts a pass; resolves with what it claimed once the next one may begin. */
  const startPass = () => new Promise<number>((handOff) => {
    const pass = (async () => {
      try {
        const summary = await o.runPass({ drain: drain.signal, abort: abort.signal, handOff });
        o.report.answered();
        events.emit('passCompleted', summary);
        handOff(summary.claimed);
      } catch (error) {
        o.report.failed(error, `${o.name} pass failed; retrying after the poll interval`);
        events.emit('passFailed', error);
        handOff(0);
      }
    })();
    alive.add(pass);
    void pass.finally(() => alive.delete(pass));
  });

  /** The poll interval, or less when a waiting item becomes due sooner. */
  const nextWaitMs = async (): Promise<number> => {
    if (!o.msUntilNextDue) return o.pollIntervalMs;
    const dueInMs = await o.msUntilNextDue().catch((error: unknown) => {
      o.report.failed(error, `${o.name}: reading when the next item is due failed; waiting the poll interval`);
      return null;
    });
    return dueInMs === null ? o.pollIntervalMs : Math.max(0, Math.min(o.pollIntervalMs, Math.ceil(dueInMs)));
  };

  const running = (async () => {
    while (!drain.signal.aborted) {
      hinted = false;
      poked = false;
      lastPassAt = Date.now();
      if (dueAt <= lastPassAt) dueAt = Infinity;
      const claimed = await startPass();
      while (alive.size >= maxPassesAlive) await Promise.race(alive);
      await o.readyToClaim?.(drain.signal);
      if (claimed !== o.batchSize) await waitForWork(await nextWaitMs());
    }
    while (alive.size > 0) await Promise.race(alive);
  })();

  return {
    events,
    poke,
    dueBy,
    async stop() {
      if (!drain.signal.aborted) {
        unsubscribe();
        drain.abort();
        wakeUp();
      }
      const force = setTimeout(() => abort.abort(), o.shutdownTimeoutMs);
      try {
        await running;
      } finally {
        clearTimeout(force);
      }
    },
  };
}
