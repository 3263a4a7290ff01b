// One shape for the service's periodic database work (rollup compaction, retention, redrive polling,
// the listener heartbeat), as River's maintenance services share one skeleton: run, wait `everyMs`
// after the run ends (runs never overlap), repeat until stopped. A failed run is reported and the
// next one is simply the next tick. stop() ends the wait at once, tells the run in flight through its
// AbortSignal, and resolves when that run has returned.
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
}

export interface Periodic {
  stop(): Promise<void>;
}

export function startPeriodic(o: PeriodicOptions): Periodic {
  const abort = new AbortController();
  const wait = () =>
    new Promise<void>((resolve) => {
      if (abort.signal.aborted) return resolve();
      const timer = setTimeout(done, o.everyMs);
      timer.unref();
      function done() {
        clearTimeout(timer);
        abort.signal.removeEventListener('abort', done);
        resolve();
      }
      abort.signal.addEventListener('abort', done, { once: true });
    });
  const loop = (async () => {
    if (!o.immediately) await wait();
    while (!abort.signal.aborted) {
      try {
        await o.runOnce(abort.signal);
      } catch (error) {
        if (o.onError) o.onError(error);
        else o.logger.warn({ err: error instanceof Error ? error.message : String(error), task: o.name }, `${o.name} failed; it runs again at the next tick`);
      }
      await wait();
    }
  })();
  return {
    async stop() {
      abort.abort();
      await loop;
    },
  };
}
