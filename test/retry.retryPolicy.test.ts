import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, nextAttemptDelayMs, parseRetryAfterMs } from '../src/domain/retryPolicy.ts';

const exponential = { backoff: 'EXPONENTIAL', baseDelayMs: 1000, maxDelayMs: 60_000 } as const;

describe('nextAttemptDelayMs', () => {
  it('doubles the exponential ceiling per attempt until the cap', () => {
    const top = () => 0.999999999;
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => nextAttemptDelayMs(exponential, n, top))).toEqual([
      1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000,
    ]);
  });

  it('draws exponential delays with full jitter between zero and the ceiling', () => {
    expect(nextAttemptDelayMs(exponential, 3, () => 0)).toBe(0);
    expect(nextAttemptDelayMs(exponential, 3, () => 0.5)).toBe(2000);
    let seed = 42;
    const lcg = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let n = 1; n <= 20; n++) {
      const d = nextAttemptDelayMs(exponential, n, lcg);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(Math.min(60_000, 1000 * 2 ** (n - 1)));
    }
  });

  it('stays finite for huge attempt counts', () => {
    expect(nextAttemptDelayMs(exponential, 5000, () => 0.999999)).toBe(60_000);
  });

  it('grows linearly and stays fixed without jitter, both capped', () => {
    const linear = { backoff: 'LINEAR', baseDelayMs: 500, maxDelayMs: 1200 } as const;
    const fixed = { backoff: 'FIXED', baseDelayMs: 750, maxDelayMs: 600 } as const;
    expect([1, 2, 3].map((n) => nextAttemptDelayMs(linear, n, () => 0.3))).toEqual([500, 1000, 1200]);
    expect([1, 9].map((n) => nextAttemptDelayMs(fixed, n, () => 0.3))).toEqual([600, 600]);
  });
});

describe('parseRetryAfterMs', () => {
  it('reads seconds and HTTP dates and caps both', () => {
    const now = Date.parse('2026-11-21T12:00:00Z');
    expect(parseRetryAfterMs('7', now)).toBe(7000);
    expect(parseRetryAfterMs('Sat, 21 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfterMs('999999', now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfterMs('soon', now)).toBeNull();
    expect(parseRetryAfterMs(null, now)).toBeNull();
  });
});
