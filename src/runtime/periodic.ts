// One shape for the service's periodic database work (rollup compaction, retention, redrive polling,
// the listener heartbeat), as River's maintenance services share one skeleton: run, wait `everyMs`
// after the run ends (runs never overlap), repeat until stopped. A failed run is reported and the
// next one is simply the next tick. stop() ends the wait at once, tells the run in flight through its
// AbortSignal, and resolves when that run has returned.
// It sits in runtime/, below live/ and workers/, because both run on it.
// Events: `runCompleted` (what runOnce returned) after every run that succeeded, `runFailed` (error).
import { EventEmitter } from 'node:events';
import type { Logger } from '../logger.ts';

export interface PeriodicOptions {
  /** Names the task in logs. */
  name: string;
  everyMs: number;
  runOnce: (signal: AbortSignal) => Promise<unknown>;
  logger: Pick<Logger, 'warn'>;
  /** Run at once rather than after the first wait. */
  immediately?: boolean;
  /** How a failed run is reported; default a warning naming the task. */
  onError?: (error: unknown) => void;
  /**
   * Subscribes to wake-ups (e.g. NOTIFY hints) and returns the unsubscribe. A wake-up ends the
   * wait early, but no sooner than `wakeGapMs` after the last run ended; one during a run makes the
   * next wait that short. Many wake-ups in a row cost one run.
   */
  wake?: (fn: () => void) => () => void;
  /** The shortest wait after a run when woken; default 0. */
  wakeGapMs?: number;
}

export interface Periodic {
  /** Emits `runCompleted` (runOnce's result) and `runFailed` (error); awaitable in tests. */
  readonly events: EventEmitter;
  stop(): Promise<void>;
}

export function startPeriodic(o: PeriodicOptions): Periodic {
  const abort = new AbortController();
  const events = new EventEmitter();
  const gapMs = Math.min(o.wakeGapMs ?? 0, o.everyMs);
  let woken = false;
  let onWake: (() => void) | null = null;
  const unsubscribe = o.wake?.(() => {
    woken = true;
    onWake?.();
  });
  const wait = () =>
    new Promise<void>((resolve) => {
      if (abort.signal.aborted) return resolve();
      let timer = setTimeout(done, woken ? gapMs : o.everyMs);
      timer.unref();
      onWake = () => {
        clearTimeout(timer);
        timer = setTimeout(done, gapMs);
        timer.unref();
        onWake = null;
      };
      function done() {
        clearTimeout(timer);
        onWake = null;
        woken = false;
        abort.signal.removeEventListener('abort', done);
        resolve();
      }
      abort.signal.addEventListener('abort', done, { once: true });
    });
  const loop = (async () => {
    if (!o.immediately) await wait();
    while (!abort.signal.aborted) {
      try {
        events.emit('runCompleted', await o.runOnce(abort.signal));
      } catch (error) {
        events.emit('runFailed', error);
        if (o.onError) o.onError(error);
        else o.logger.warn({ err: error instanceof Error ? error.message : String(error), task: o.name }, `${o.name} failed; it runs again at the next tick`);
      }
      await wait();
    }
  })();
  return {
    events,
    async stop() {
      unsubscribe?.();
      abort.abort();
      await loop;
    },
  };
}
