// A redrive's limits: the rate ramp (start → max over rampSeconds) and the failure guard. Pure:
// validation, merging a resume's changes into the current limits, the rate at a moment, and the
// guard's verdict on a window of delivery outcomes. The clock comes in as elapsed seconds.
import type { GuardWindow } from '../db/sql/readRedriveGuardWindow.ts';

export type { GuardWindow };

export const MAX_REDRIVE_RATE_PER_SECOND = 100_000;
export const MAX_RAMP_SECONDS = 7 * 24 * 3600;
export const MAX_GUARD_WINDOW = 10_000;
export const DEFAULT_GUARD_WINDOW = 100;

export interface RedriveLimits {
  startRatePerSecond: number;
  maxRatePerSecond: number;
  rampSeconds: number;
  /** 0 to 1; null: no guard. */
  pauseWhenFailureRateAbove: number | null;
  windowSize: number;
}

/** What a caller asked for: absent (undefined) keeps the current value; null clears the guard. */
export interface RedriveLimitsChange {
  startRatePerSecond?: number | null;
  maxRatePerSecond?: number | null;
  rampSeconds?: number | null;
  pauseWhenFailureRateAbove?: number | null;
  windowSize?: number | null;
}

export interface LimitsProblem {
  field: keyof RedriveLimits;
  message: string;
}

const isIntIn = (v: number, min: number, max: number) => Number.isInteger(v) && v >= min && v <= max;

/** Each given value on its own: the first one out of range, or null. */
function problemInChange(c: RedriveLimitsChange): LimitsProblem | null {
  for (const field of ['startRatePerSecond', 'maxRatePerSecond'] as const) {
    const v = c[field];
    if (v !== undefined && v !== null && !isIntIn(v, 1, MAX_REDRIVE_RATE_PER_SECOND)) {
      return { field, message: `must be an integer from 1 to ${MAX_REDRIVE_RATE_PER_SECOND} (events per second)` };
    }
  }
  if (c.rampSeconds !== undefined && c.rampSeconds !== null && !isIntIn(c.rampSeconds, 0, MAX_RAMP_SECONDS)) {
    return { field: 'rampSeconds', message: `must be an integer from 0 to ${MAX_RAMP_SECONDS}` };
  }
  const guard = c.pauseWhenFailureRateAbove;
  if (guard !== undefined && guard !== null && !(Number.isFinite(guard) && guard >= 0 && guard <= 1)) {
    return { field: 'pauseWhenFailureRateAbove', message: 'must be a failure share from 0 to 1' };
  }
  if (c.windowSize !== undefined && c.windowSize !== null && !isIntIn(c.windowSize, 1, MAX_GUARD_WINDOW)) {
    return { field: 'windowSize', message: `must be an integer from 1 to ${MAX_GUARD_WINDOW} (delivery outcomes)` };
  }
  return null;
}

/**
 * The limits after applying `change` to `current` (for a new redrive, `current` holds the defaults),
 * or the first problem. A start rate above the maximum is a problem; a maximum given alone lowers
 * nothing else, so `{ maxRatePerSecond: 50 }` on a redrive starting at 100 is refused, not guessed.
 */
export function applyLimitsChange(current: RedriveLimits, change: RedriveLimitsChange): RedriveLimits | LimitsProblem {
  const problem = problemInChange(change);
  if (problem) return problem;
  const next: RedriveLimits = {
    maxRatePerSecond: change.maxRatePerSecond ?? current.maxRatePerSecond,
    startRatePerSecond: change.startRatePerSecond ?? current.startRatePerSecond,
    rampSeconds: change.rampSeconds ?? current.rampSeconds,
    pauseWhenFailureRateAbove: change.pauseWhenFailureRateAbove === undefined ? current.pauseWhenFailureRateAbove : change.pauseWhenFailureRateAbove,
    windowSize: change.windowSize ?? current.windowSize,
  };
  if (next.startRatePerSecond > next.maxRatePerSecond) {
    return { field: 'startRatePerSecond', message: `must not be above maxRatePerSecond (${next.maxRatePerSecond})` };
  }
  return next;
}

export const isLimitsProblem = (v: RedriveLimits | LimitsProblem): v is LimitsProblem => 'field' in v;

/** The limits of a new redrive whose caller gave only a rate (or nothing): constant, no guard. */
export function constantLimits(ratePerSecond: number): RedriveLimits {
  return { startRatePerSecond: ratePerSecond, maxRatePerSecond: ratePerSecond, rampSeconds: 0, pauseWhenFailureRateAbove: null, windowSize: DEFAULT_GUARD_WINDOW };
}

/** Events per second `elapsedSeconds` after the ramp started: linear from start to max, then max. */
export function rampRatePerSecond(l: Pick<RedriveLimits, 'startRatePerSecond' | 'maxRatePerSecond' | 'rampSeconds'>, elapsedSeconds: number): number {
  if (l.rampSeconds <= 0 || elapsedSeconds >= l.rampSeconds) return l.maxRatePerSecond;
  const share = Math.max(0, elapsedSeconds) / l.rampSeconds;
  return l.startRatePerSecond + (l.maxRatePerSecond - l.startRatePerSecond) * share;
}

/**
 * True when the window is full and its failure share is above the threshold. A window not yet
 * full never trips: three failures out of the first four outcomes are not a trend.
 */
export function isGuardTripped(l: Pick<RedriveLimits, 'pauseWhenFailureRateAbove' | 'windowSize'>, w: GuardWindow): boolean {
  if (l.pauseWhenFailureRateAbove === null || w.outcomes < l.windowSize) return false;
  return w.failures / w.outcomes > l.pauseWhenFailureRateAbove;
}

/** The recorded reason a guard gives when it pauses a redrive. */
export function guardPauseReason(l: Pick<RedriveLimits, 'pauseWhenFailureRateAbove'>, w: GuardWindow): string {
  const share = (w.failures / Math.max(1, w.outcomes)).toFixed(3);
  return `failure rate ${share} (${w.failures} of the last ${w.outcomes} deliveries) is above ${l.pauseWhenFailureRateAbove}`;
}
