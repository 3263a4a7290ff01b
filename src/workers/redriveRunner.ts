// The redrive runner. Lifecycle: idle → (a poll, every pollIntervalMs, finds a RUNNING redrive and takes its lease) →
// batches, each preceded by the guard (when the redrive has one: it may pause the redrive itself)
// and followed by a pause that keeps the ramp's current rate → idle when it completes, is paused or
// cancelled, or the lease is lost. stop() ends the current wait at once and returns after the
// batch in flight (a batch is one statement: it either happened or did not).
// A crashed runner's lease expires and another process resumes from the redrive's last_id.
// Database trouble (down, timeouts) is retried forever; any other error that fails
// `maxBatchFailures` batches in a row marks the redrive FAILED with that error (resumable).
import { EventEmitter, once } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Db } from '../db/createDb.ts';
import { claimRedrive, type RedriveClaim } from '../db/sql/claimRedrive.ts';
import { countRedriveAwaitingDelivery } from '../db/sql/countRedriveAwaitingDelivery.ts';
import { classifyDatabaseError } from '../db/errors.ts';
import { rampRatePerSecond } from '../domain/redriveLimits.ts';
import { failRedrive, limitsOf, pauseRedriveByGuard, runRedriveBatch } from '../domain/redrives.ts';
import type { Logger } from '../logger.ts';
import { createOutageLog, type OutageLog } from '../db/outageLog.ts';
import { startPeriodic } from './periodic.ts';

export const DEFAULT_REDRIVE_POLL_INTERVAL_MS = 1_000;
export const DEFAULT_REDRIVE_LEASE_SECONDS = 30;
export const DEFAULT_REDRIVE_MAX_BATCH_FAILURES = 5;
/** How long a guarded redrive a window ahead of its deliveries waits before looking again. */
export const AHEAD_WAIT_MS = 100;

export interface RedriveRunnerDeps {
  db: Db;
  logger: Logger;
  /** Shared with the service's other loops, so an outage is logged once; default: its own. */
  outage?: OutageLog;
  owner?: string;
  pollIntervalMs?: number;
  leaseSeconds?: number;
  /** Consecutive failed batches (not counting database trouble) before the redrive is FAILED. */
  maxBatchFailures?: number;
}

export interface RedriveRunnerEvents {
  batch: [{ redriveId: bigint; scanned: number; requeued: number; completed: boolean; ratePerSecond: number }];
  /** The guard paused a redrive (after the pause committed). */
  guardPaused: [{ redriveId: bigint; reason: string }];
}

export interface RedriveRunner {
  readonly owner: string;
  /** 'batch' after every committed batch (awaitable in tests). */
  readonly events: EventEmitter<RedriveRunnerEvents>;
  stop(): Promise<void>;
}

export function startRedriveRunner(deps: RedriveRunnerDeps): RedriveRunner {
  const owner = deps.owner ?? `redrive-${randomUUID()}`;
  const pollIntervalMs = deps.pollIntervalMs ?? DEFAULT_REDRIVE_POLL_INTERVAL_MS;
  const leaseSeconds = deps.leaseSeconds ?? DEFAULT_REDRIVE_LEASE_SECONDS;
  const maxBatchFailures = deps.maxBatchFailures ?? DEFAULT_REDRIVE_MAX_BATCH_FAILURES;
  let failing: { redriveId: bigint; count: number } | null = null;
  const events = new EventEmitter<RedriveRunnerEvents>();
  const logger = deps.logger.child({ component: 'redrive', owner });
  const outage = deps.outage ?? createOutageLog(logger);

  // `signal` is startPeriodic's: stop() aborts it, ending a wait between batches at once.
  const sleep = async (ms: number, signal: AbortSignal) => {
    if (ms <= 0 || signal.aborted) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  };

  // Limits are read once per claim: a pause ends the claim (the lease is dropped), so a resume with
  // new limits is always seen. The ramp's clock is the database's at the claim plus the time since.
  const drive = async (claim: RedriveClaim, signal: AbortSignal) => {
    const redriveId = claim.id;
    const row = await deps.db.redrive.findUniqueOrThrow({ where: { id: redriveId } });
    const limits = limitsOf(row);
    const claimedAt = performance.now();
    const rampElapsedSeconds = () => (claim.rampElapsedMs + performance.now() - claimedAt) / 1000;
    while (!signal.aborted) {
      const started = Date.now();
      if (limits.pauseWhenFailureRateAbove !== null) {
        const verdict = await pauseRedriveByGuard(deps.db, { redriveId, owner, limits, afterAttemptId: row.guardAfterAttemptId });
        if (verdict.paused) {
          logger.warn({ redriveId, reason: verdict.reason }, 'redrive paused by its guard; resume it once the target recovers');
          events.emit('guardPaused', { redriveId, reason: verdict.reason });
          return;
        }
        // A guard can only judge what was delivered: a guarded redrive keeps at most one window of
        // its events waiting for delivery, so it never gets further ahead of a failing target than
        // the guard can see (and never faster than the target takes them).
        if ((await countRedriveAwaitingDelivery(deps.db, { redriveId, cap: limits.windowSize })) >= limits.windowSize) {
          // Waiting renews no lease: give the claim back well before it lapses; the next poll renews it.
          if (performance.now() - claimedAt > (leaseSeconds * 1000) / 3) return;
          await sleep(AHEAD_WAIT_MS, signal);
          continue;
        }
      }
      const ratePerSecond = rampRatePerSecond(limits, rampElapsedSeconds());
      const limit = Math.max(1, Math.min(row.batchSize, Math.floor(ratePerSecond)));
      const result = await runRedriveBatch(deps.db, { redriveId, owner, leaseSeconds, limit });
      if (!result.held) return;
      failing = null;
      events.emit('batch', { redriveId, scanned: result.scanned, requeued: result.requeued, completed: result.completed, ratePerSecond });
      if (result.completed) {
        logger.info({ redriveId }, 'redrive completed');
        return;
      }
      await sleep((result.scanned / ratePerSecond) * 1000 - (Date.now() - started), signal);
    }
  };

  const onBatchError = async (redriveId: bigint, error: unknown) => {
    if (classifyDatabaseError(error)) {
      outage.failed(error, 'redrive batch hit database trouble; retrying after the poll interval', { redriveId: String(redriveId) });
      return;
    }
    failing = failing?.redriveId === redriveId ? { redriveId, count: failing.count + 1 } : { redriveId, count: 1 };
    if (failing.count < maxBatchFailures) {
      logger.error({ err: error, redriveId, failures: failing.count }, 'redrive batch failed; retrying after the poll interval');
      return;
    }
    logger.error({ err: error, redriveId, failures: failing.count }, 'redrive failed; resume it once the cause is fixed');
    failing = null;
    await failRedrive(deps.db, redriveId, error instanceof Error ? error.message : String(error));
  };

  // One poll: claim a RUNNING redrive and drive it to its end, then the next, until none is left.
  const poll = async (signal: AbortSignal) => {
    while (!signal.aborted) {
      let redriveId: bigint | null = null;
      try {
        const claim = await claimRedrive(deps.db, { owner, leaseSeconds });
        outage.answered();
        if (claim === null) return;
        redriveId = claim.id;
        await drive(claim, signal);
      } catch (error) {
        if (redriveId === null) outage.failed(error, 'redrive poll failed; retrying after the poll interval');
        else await onBatchError(redriveId, error).catch((e: unknown) => logger.error({ err: e, redriveId }, 'could not mark the redrive FAILED'));
        return;
      }
    }
  };
  const polling = startPeriodic({ name: 'redrive poll', everyMs: pollIntervalMs, immediately: true, runOnce: poll, logger });

  return {
    owner,
    events,
    stop: () => polling.stop(),
  };
}

/** Resolves with the next batch event of `redriveId` (test helper for awaiting progress). */
export async function nextBatch(runner: RedriveRunner, redriveId: bigint) {
  for (;;) {
    const [event] = await once(runner.events, 'batch');
    if (event.redriveId === redriveId) return event;
  }
}
