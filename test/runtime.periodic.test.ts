import { describe, expect, it, vi } from 'vitest';
import { startPeriodic } from '../src/runtime/periodic.ts';

const logger = { warn: vi.fn() };

describe('startPeriodic', () => {
  it('runs again after each run ends, never two at once, and keeps going after a failure', async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    const errors: unknown[] = [];
    const enough = Promise.withResolvers<void>();
    const task = startPeriodic({
      name: 'test',
      everyMs: 1,
      immediately: true,
      onError: (e) => errors.push(e),
      logger,
      runOnce: async () => {
        active += 1;
        maxActive = Math.max(maxActive, active);
        runs += 1;
        await new Promise((r) => setTimeout(r, 5));
        active -= 1;
        if (runs === 2) throw new Error('second run fails');
        if (runs === 5) enough.resolve();
      },
    });
    await enough.promise;
    await task.stop();

    expect(maxActive).toBe(1);
    expect(errors).toEqual([new Error('second run fails')]);
    expect(runs).toBeGreaterThanOrEqual(5);
  });

  it('stop() ends the wait at once, signals the run in flight and resolves when it returns', async () => {
    const started = Promise.withResolvers<void>();
    let sawAbort = false;
    const slow = startPeriodic({
      name: 'slow',
      everyMs: 60_000,
      immediately: true,
      logger,
      runOnce: (signal) =>
        new Promise<void>((resolve) => {
          started.resolve();
          signal.addEventListener('abort', () => ((sawAbort = true), resolve()), { once: true });
        }),
    });
    await started.promise;
    await slow.stop();
    expect(sawAbort).toBe(true);

    const waiting = startPeriodic({ name: 'idle', everyMs: 60_000, logger, runOnce: async () => expect.fail('must not run') });
    // Resolves without waiting out the minute (the test's own timeout would fail it).
    await waiting.stop();
  });

  it('reports a failure with the task’s name when no onError is given', async () => {
    const warn = vi.fn();
    const failed = Promise.withResolvers<void>();
    const task = startPeriodic({ name: 'compaction', everyMs: 1, immediately: true, logger: { warn: (...a: unknown[]) => (warn(...a), failed.resolve()) } as never, runOnce: async () => Promise.reject(new Error('db down')) });
    await failed.promise;
    await task.stop();
    expect(warn).toHaveBeenCalledWith({ err: 'db down', task: 'compaction' }, 'compaction failed; it runs again at the next tick');
  });

  it('runs at once when woken instead of waiting out its interval, and once for a burst of wake-ups', async () => {
    let wakeUp: () => void = () => expect.fail('not subscribed');
    let runs = 0;
    const ran = [Promise.withResolvers<void>(), Promise.withResolvers<void>(), Promise.withResolvers<void>()];
    const task = startPeriodic({
      name: 'woken',
      everyMs: 60_000,
      immediately: true,
      logger,
      wake: (fn) => ((wakeUp = fn), () => (wakeUp = () => {})),
      runOnce: async () => {
        ran[runs]?.resolve();
        runs += 1;
      },
    });
    await ran[0]!.promise;
    wakeUp();
    wakeUp();
    wakeUp();
    // A minute-long interval: only the wake-ups can bring the second run within the test's timeout.
    await ran[1]!.promise;
    wakeUp();
    await ran[2]!.promise;
    await task.stop();
    expect(runs).toBe(3);
  });
});
