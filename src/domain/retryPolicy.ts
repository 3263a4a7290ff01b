// Pure retry-policy arithmetic. Clock and randomness come in as arguments, so tests are exact.

export type BackoffKind = 'EXPONENTIAL' | 'LINEAR' | 'FIXED';

export interface BackoffPolicy {
  backoff: BackoffKind;
  /** First delay, ms. */
  baseDelayMs: number;
  /** Upper bound of any delay, ms. */
  maxDelayMs: number;
}

/** Longest Retry-After we honour, so a target cannot park an event for days. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * Delay before the next attempt, after `attempts` attempts (≥ 1) have been made.
 * EXPONENTIAL uses full jitter: a uniform draw in [0, min(max, base·2^(attempts-1))]
 * (AWS "Exponential Backoff and Jitter"), so a burst of failures does not retry in lockstep.
 * LINEAR is base·attempts, FIXED is base; both capped at maxDelayMs and not jittered.
 * `random` returns a number in [0, 1).
 */
export function nextAttemptDelayMs(policy: BackoffPolicy, attempts: number, random: () => number): number {
  const n = Math.max(1, Math.floor(attempts));
  const cap = Math.max(0, policy.maxDelayMs);
  switch (policy.backoff) {
    case 'FIXED':
      return Math.min(cap, policy.baseDelayMs);
    case 'LINEAR':
      return Math.min(cap, policy.baseDelayMs * n);
    case 'EXPONENTIAL': {
      // 2^n overflows to Infinity past n≈1024; min() with the cap keeps it finite.
      const ceiling = Math.min(cap, policy.baseDelayMs * 2 ** (n - 1));
      return Math.floor(random() * (ceiling + 1));
    }
  }
}

/**
 * The delay a target asked for with Retry-After (seconds or an HTTP date), capped at
 * MAX_RETRY_AFTER_MS; null when the header is absent or unreadable. `nowMs` is the caller's clock.
 */
export function parseRetryAfterMs(header: string | null, nowMs: number): number | null {
  if (!header) return null;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Math.min(MAX_RETRY_AFTER_MS, Number(value) * 1000);
  const at = Date.parse(value);
  if (Number.isNaN(at)) return null;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, at - nowMs));
}

/** True when the attempt just made was the last one allowed. */
export function isOutOfAttempts(attempts: number, maxAttempts: number): boolean {
  return attempts >= maxAttempts;
}
