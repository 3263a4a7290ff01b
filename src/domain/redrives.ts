// Throttled redrives: a large requeue by filter, done in batches at a rate limit by the runner
// (src/workers/redriveRunner.ts). States: RUNNING ⇄ PAUSED → CANCELLED; RUNNING → COMPLETED;
// RUNNING → FAILED (batches keep failing) → RUNNING or CANCELLED. The rate ramps from a start to
// a maximum; a guard pauses the redrive itself when its deliveries fail too often
// (src/domain/redriveLimits.ts). Every status change is a row in redrive_actions.
// The status is the runner's: COMPLETED means every event was requeued (or skipped), not
// delivered. Whether the redrive is done is `isRedriveSettled`, from its events' outcomes.
import type { Db } from '../db/createDb.ts';
import { findRedrive } from '../db/models/redrives.ts';
import { countDeadLetterTargets } from '../db/sql/countDeadLetterTargets.ts';
import { insertRedrive } from '../db/sql/insertRedrive.ts';
import type { Queryable } from '../db/sql/queryable.ts';
import { readRedriveGuardWindow } from '../db/sql/readRedriveGuardWindow.ts';
import { requeueRedriveBatch, type RedriveBatchResult } from '../db/sql/requeueRedriveBatch.ts';
import { setRedriveStatus } from '../db/sql/setRedriveStatus.ts';
import { raiseAlert } from './alerts.ts';
import {
  applyLimitsChange, constantLimits, guardPauseReason, isGuardTripped, isLimitsProblem, MAX_REDRIVE_RATE_PER_SECOND,
  type GuardWindow, type RedriveLimits, type RedriveLimitsChange,
} from './redriveLimits.ts';
import type { RedriveStatus } from '../generated/prisma/enums.ts';
import { deadLetterWhereSql, type DeadLetterFilter } from '../db/sql/deadLetterWhere.ts';
import { DomainError, InvalidTransitionError, ValidationError } from './errors.ts';
import { checkSources, optionalReason, requeue, type BulkResult, type RequeueOptions } from './operatorActions.ts';
import { allowedFromStatuses } from './transitions.ts';
import type { WriteConfig } from './writeConfig.ts';

// One redrive batch is one statement: 100 rows keep it to a few milliseconds, so it never holds the
// live feed's horizon (a faster redrive runs more batches a second).
export const MAX_REDRIVE_BATCH = 100;

/** No redrive with this id. */
export class RedriveNotFoundError extends DomainError {
  override name = 'RedriveNotFoundError';
  readonly id: bigint;
  constructor(id: bigint) {
    super('NOT_FOUND', `no redrive with id ${id}`);
    this.id = id;
  }
}

/** A redrive limit out of range (the API answers it as BAD_USER_INPUT naming the argument). */
export class RedriveLimitsError extends ValidationError {
  override name = 'RedriveLimitsError';
}

/** Who the history names for what the service does by itself. */
export const GUARD_ACTOR = 'redrive-guard';
export const RUNNER_ACTOR = 'redrive-runner';

// A batch is at most one second of work, so the rate limit stays smooth.
const batchSizeFor = (maxRatePerSecond: number) => Math.min(MAX_REDRIVE_BATCH, maxRatePerSecond);

export interface StartRedriveOptions {
  filter: DeadLetterFilter;
  /** A constant rate (the older, simpler option); null: the limits' or the configured default. */
  ratePerSecond: number | null;
  limits: RedriveLimitsChange | null;
  defaultRatePerSecond: number;
  resetAttempts: boolean;
  force: boolean;
  reason: string | null;
  /** Deliver to each event's origin instead of its policy's target. */
  isToSource?: boolean;
}

/**
 * The limits a new redrive runs with: `ratePerSecond` is a constant rate; `limits` can ramp it
 * and add a guard. A start rate alone ramps up to the configured default. Throws RedriveLimitsError.
 */
export function limitsForNewRedrive(o: Pick<StartRedriveOptions, 'ratePerSecond' | 'limits' | 'defaultRatePerSecond'>): RedriveLimits {
  const change = o.limits ?? {};
  if (o.ratePerSecond !== null) {
    if (!Number.isInteger(o.ratePerSecond) || o.ratePerSecond < 1 || o.ratePerSecond > MAX_REDRIVE_RATE_PER_SECOND) {
      throw new RedriveLimitsError('ratePerSecond', `must be an integer from 1 to ${MAX_REDRIVE_RATE_PER_SECOND}`);
    }
    if (change.maxRatePerSecond != null) throw new RedriveLimitsError('ratePerSecond', 'give ratePerSecond or maxRatePerSecond, not both');
  }
  const max = change.maxRatePerSecond ?? o.ratePerSecond ?? Math.max(o.defaultRatePerSecond, 1);
  const limits = applyLimitsChange(constantLimits(max), { ...change, maxRatePerSecond: max });
  if (isLimitsProblem(limits)) throw new RedriveLimitsError(limits.field, limits.message);
  return limits;
}

/** Starts a redrive over what the filter selects now; the runner picks it up. */
export async function startRedrive(db: Queryable, actor: string, o: StartRedriveOptions): Promise<{ id: bigint; total: number }> {
  const limits = limitsForNewRedrive(o);
  return insertRedrive(db, {
    where: deadLetterWhereSql(o.filter),
    allowed: allowedFromStatuses('REQUEUE', o.force),
    filterJson: JSON.stringify(o.filter, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)),
    ...limits,
    batchSize: batchSizeFor(limits.maxRatePerSecond),
    resetAttempts: o.resetAttempts,
    force: o.force,
    reason: o.reason,
    isToSource: o.isToSource ?? false,
    actor,
  });
}

const MOVES: Record<'pause' | 'resume' | 'cancel', { from: RedriveStatus[]; to: 'RUNNING' | 'PAUSED' | 'CANCELLED' }> = {
  pause: { from: ['RUNNING'], to: 'PAUSED' },
  resume: { from: ['PAUSED', 'FAILED'], to: 'RUNNING' },
  cancel: { from: ['RUNNING', 'PAUSED', 'FAILED'], to: 'CANCELLED' },
};

/** A redrive row's limits (rows from before the ramp existed start at their rate). */
export function limitsOf(r: {
  ratePerSecond: number; startRatePerSecond: number | null; rampSeconds: number; pauseWhenFailureRateAbove: number | null; windowSize: number;
}): RedriveLimits {
  return {
    startRatePerSecond: r.startRatePerSecond ?? r.ratePerSecond,
    maxRatePerSecond: r.ratePerSecond,
    rampSeconds: r.rampSeconds,
    pauseWhenFailureRateAbove: r.pauseWhenFailureRateAbove,
    windowSize: r.windowSize,
  };
}

export type RequeueOutcome = BulkResult & { redriveId: bigint | null };

/**
 * A requeue as operators ask for it: by filter above `config.redriveThreshold` events (or with an
 * explicit rate) it starts a throttled redrive; otherwise it requeues at once.
 */
export async function requeueOrStartRedrive(
  db: Db,
  actor: string,
  config: WriteConfig,
  o: RequeueOptions & { ratePerSecond: number | null; limits?: RedriveLimitsChange | null },
): Promise<RequeueOutcome> {
  const limits = o.limits ?? null;
  const asksForRedrive = o.ratePerSecond !== null || limits !== null;
  if ('ids' in o.selection && asksForRedrive) throw new ValidationError(o.ratePerSecond !== null ? 'ratePerSecond' : 'redriveLimits', 'only applies to a requeue by filter');
  // Bad limits are refused even on a dry run, before anything is counted or written.
  if (asksForRedrive) limitsForNewRedrive({ ratePerSecond: o.ratePerSecond, limits, defaultRatePerSecond: config.redriveRatePerSecond });
  if ('filter' in o.selection && !o.dryRun && Object.keys(o.selection.filter).length > 0) {
    const reason = optionalReason(o.reason);
    const where = deadLetterWhereSql(o.selection.filter);
    const { count } = await countDeadLetterTargets(db, { where, allowed: allowedFromStatuses('REQUEUE', o.force), sample: 0 });
    if (count > config.redriveThreshold || asksForRedrive) {
      if (o.at) throw new ValidationError('at', 'a throttled redrive requeues for now; leave at empty or use a smaller selection');
      const isToSource = o.destination === 'SOURCE';
      if (isToSource) await checkSources(db, o);
      const redrive = await startRedrive(db, actor, {
        filter: o.selection.filter,
        ratePerSecond: o.ratePerSecond,
        limits,
        defaultRatePerSecond: config.redriveRatePerSecond,
        resetAttempts: o.resetAttempts,
        force: o.force,
        reason,
        isToSource,
      });
      return { count: redrive.total, ids: [], dryRun: false, redriveId: redrive.id };
    }
  }
  return { ...(await requeue(db, actor, o)), redriveId: null };
}

export interface MoveRedriveOptions {
  actor: string;
  reason?: string | null;
  /** Resume only: new limits; absent fields keep their value, a null guard removes it. */
  limits?: RedriveLimitsChange | null;
}

/**
 * Pauses, resumes or cancels a redrive. A batch in flight finishes; the next one sees the status.
 * A resume restarts the ramp from its start rate and the guard's window from empty.
 */
export async function moveRedrive(db: Db, id: bigint, move: keyof typeof MOVES, o: MoveRedriveOptions): Promise<void> {
  const { from, to } = MOVES[move];
  const reason = optionalReason(o.reason);
  let limits: (RedriveLimits & { batchSize: number }) | undefined;
  if (o.limits && move !== 'resume') throw new RedriveLimitsError('limits', 'only a resume can set new limits');
  if (o.limits) {
    const row = await findRedrive(db, id);
    if (!row) throw new RedriveNotFoundError(id);
    const next = applyLimitsChange(limitsOf(row), o.limits);
    if (isLimitsProblem(next)) throw new RedriveLimitsError(next.field, next.message);
    limits = { ...next, batchSize: batchSizeFor(next.maxRatePerSecond) };
  }
  const result = await setRedriveStatus(db, { id, from, to, actor: o.actor, reason, limits, pausedBy: 'OPERATOR' });
  if (result.status === null) throw new RedriveNotFoundError(id);
  if (!result.changed) throw new InvalidTransitionError([id], result.status as never, move.toUpperCase());
}

/** Marks a RUNNING redrive FAILED with the error that kept its batches from committing. */
export async function failRedrive(db: Db, id: bigint, error: string): Promise<void> {
  await setRedriveStatus(db, { id, from: ['RUNNING'], to: 'FAILED', actor: RUNNER_ACTOR, error: error.slice(0, 2_000) });
}

/** Runs the next batch (at most `limit` events) of a redrive this owner holds the lease on. */
export function runRedriveBatch(db: Db, p: { redriveId: bigint; owner: string; leaseSeconds: number; limit: number }): Promise<RedriveBatchResult> {
  return requeueRedriveBatch(db, { ...p, allowed: (force) => allowedFromStatuses('REQUEUE', force) });
}

export type GuardVerdict = { paused: false; window: GuardWindow } | { paused: true; window: GuardWindow; reason: string };

/**
 * The guard, run by the runner before each batch of a redrive it holds: reads the window and, when
 * it trips, pauses the redrive (only while this owner still holds it, so a pause or cancel by an
 * operator meanwhile wins) with the reason and the window in its history, then raises the alert.
 */
export async function pauseRedriveByGuard(
  db: Db,
  p: { redriveId: bigint; owner: string; limits: RedriveLimits; afterAttemptId: bigint },
): Promise<GuardVerdict> {
  const window = await readRedriveGuardWindow(db, { redriveId: p.redriveId, afterAttemptId: p.afterAttemptId, windowSize: p.limits.windowSize });
  if (!isGuardTripped(p.limits, window)) return { paused: false, window };
  const reason = guardPauseReason(p.limits, window);
  const result = await setRedriveStatus(db, {
    id: p.redriveId, from: ['RUNNING'], to: 'PAUSED', actor: GUARD_ACTOR, reason, pausedBy: 'GUARD', owner: p.owner,
    detail: { window: { outcomes: window.outcomes, failures: window.failures, lastAttemptId: window.lastAttemptId } },
  });
  if (!result.changed) return { paused: false, window };
  // The outbound alert (rules with trigger REDRIVE_PAUSED), throttled per redrive. A process killed
  // between the pause and this call skips it; the PAUSED row in redrive_actions stays the record.
  await raiseAlert(db, {
    trigger: 'REDRIVE_PAUSED', subjectId: p.redriveId, summary: `Redrive ${p.redriveId} paused itself: ${reason}`,
    details: { redriveId: String(p.redriveId), reason, threshold: p.limits.pauseWhenFailureRateAbove, window: { outcomes: window.outcomes, failures: window.failures } },
  });
  return { paused: true, window, reason };
}

/**
 * Whether a redrive is done: the runner finished (COMPLETED or CANCELLED) and every event it
 * requeued is in an end state (delivered, exhausted, resolved, discarded or deleted). A PAUSED or
 * FAILED redrive still has events to requeue, so it is not.
 */
export function isRedriveSettled(status: RedriveStatus, outcomes: { PENDING: number; FAILING: number }): boolean {
  return (status === 'COMPLETED' || status === 'CANCELLED') && outcomes.PENDING === 0 && outcomes.FAILING === 0;
}
