// The redrive runner, which also runs payload transforms: two job kinds on one machinery. Each kind
// has its own poll loop (a long throttled redrive never delays a transform), claims by lease, and
// counts failed batches the same way.
// Redrives. Lifecycle: idle → (a poll, every pollIntervalMs, finds a RUNNING redrive and takes its lease) →
// batches, each preceded by the guard (when the redrive has one: it may pause the redrive itself)
// and followed by a pause that keeps the ramp's current rate → idle when it completes, is paused or
// cancelled, or the lease is lost. A crashed runner's lease expires and another process resumes
// from the redrive's last_id.
// Transforms (src/domain/transformBatches.ts): a poll finds a RUNNING or UNDOING transform and
// takes its lease → batches back to back, each one short transaction → idle when it is APPLIED or
// UNDONE, an undo takes it over, or the lease is lost. A crashed runner's lease expires and another
// process continues from the items (or history rows) left.
// stop() ends the current wait at once and returns after the batch in flight (a batch is one
// statement or one transaction: it either happened or did not).
// Database trouble (down, timeouts) is retried forever; any other error that fails
// `maxBatchFailures` batches of one job in a row marks it FAILED with that error (resumable / undoable).
import { EventEmitter, once } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Db } from '../db/createDb.ts';
import { claimRedrive, type RedriveClaim } from '../db/sql/claimRedrive.ts';
import { claimTransform } from '../db/sql/claimTransform.ts';
import { countRedriveAwaitingDelivery } from '../db/sql/countRedriveAwaitingDelivery.ts';
import { classifyDatabaseError } from '../db/errors.ts';
import { rampRatePerSecond } from '../domain/redriveLimits.ts';
import { failRedrive, limitsOf, pauseRedriveByGuard, runRedriveBatch } from '../domain/redrives.ts';
import { failTransform, runTransformBatch, type TransformBatchResult } from '../domain/transformBatches.ts';
import type { Logger } from '../logger.ts';
import { createOutageLog, type OutageLog } from '../db/outageLog.ts';
import { startPeriodic } from '../runtime/periodic.ts';

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
  /** After every committed transform batch. */
  transformBatch: [{ transformId: bigint } & Omit<TransformBatchResult, 'held'>];
}

export interface RedriveRunner {
  readonly owner: string;
  /** 'batch' after every committed redrive batch, 'transformBatch' after a transform's (awaitable in tests). */
  readonly events: EventEmitter<RedriveRunnerEvents>;
  stop(): Promise<void>;
}

/** One kind of batched job the runner hosts. */
interface JobKind {
  name: 'redrive' | 'transform';
  idKey: 'redriveId' | 'transformId';
  afterFailure: string;
  /** Takes the lease on the next job of this kind, if any, and says how to drive it to its end. */
  claim(): Promise<{ id: bigint; drive: (signal: AbortSignal) => Promise<void> } | null>;
  fail(id: bigint, error: string): Promise<void>;
}

export function startRedriveRunner(deps: RedriveRunnerDeps): RedriveRunner {
  const owner = deps.owner ?? `redrive-${randomUUID()}`;
  const pollIntervalMs = deps.pollIntervalMs ?? DEFAULT_REDRIVE_POLL_INTERVAL_MS;
  const leaseSeconds = deps.leaseSeconds ?? DEFAULT_REDRIVE_LEASE_SECONDS;
  const maxBatchFailures = deps.maxBatchFailures ?? DEFAULT_REDRIVE_MAX_BATCH_FAILURES;
  // Consecutive failed batches, per kind (the two loops run side by side): which job, how many.
  const failing = new Map<JobKind['name'], { id: bigint; count: number }>();
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
  const driveRedrive = async (claim: RedriveClaim, signal: AbortSignal) => {
    const redriveId = claim.id;
    const row = await deps.db.redrive.findUniqueOrThrow({ where: { id: redriveId } });
    const limits = limitsOf(row);
    const claimedAt = performance.now();
    const rampElapsedSeconds = () => (claim.rampElapsedMs + performance.now() - claimedAt) / 1000;
    while (!signal.aborted) {
      const started = Date.now();
      let room = Infinity; // how many more events the guard's window has room for
      if (limits.pauseWhenFailureRateAbove !== null) {
        const verdict = await pauseRedriveByGuard(deps.db, { redriveId, owner, limits, afterAttemptId: row.guardAfterAttemptId });
        if (verdict.paused) {
          logger.warn({ redriveId, reason: verdict.reason }, 'redrive paused by its guard; resume it once the target recovers');
          events.emit('guardPaused', { redriveId, reason: verdict.reason });
          return;
        }
        // A guard can only judge what was delivered: a guarded redrive keeps at most one window of
        // its events waiting for delivery (a batch only tops it up), so a failing target sees at
        // most one window of them before the pause, however late the guard looks (and the redrive
        // never goes faster than the target takes them).
        const awaiting = await countRedriveAwaitingDelivery(deps.db, { redriveId, cap: limits.windowSize });
        if (awaiting >= limits.windowSize) {
          // Waiting renews no lease: give the claim back well before it lapses; the next poll renews it.
          if (performance.now() - claimedAt > (leaseSeconds * 1000) / 3) return;
          await sleep(AHEAD_WAIT_MS, signal);
          continue;
        }
        room = limits.windowSize - awaiting;
      }
      const ratePerSecond = rampRatePerSecond(limits, rampElapsedSeconds());
      const limit = Math.max(1, Math.min(row.batchSize, Math.floor(ratePerSecond), room));
      const result = await runRedriveBatch(deps.db, { redriveId, owner, leaseSeconds, limit });
      if (!result.held) return;
      failing.delete('redrive');
      events.emit('batch', { redriveId, scanned: result.scanned, requeued: result.requeued, completed: result.completed, ratePerSecond });
      if (result.completed) {
        logger.info({ redriveId }, 'redrive completed');
        return;
      }
      await sleep((result.scanned / ratePerSecond) * 1000 - (Date.now() - started), signal);
    }
  };

  // Transforms run batch after batch: each is one short transaction, and the feed and other writers
  // get in between them.
  const driveTransform = async (transformId: bigint, signal: AbortSignal) => {
    while (!signal.aborted) {
      const { held, ...result } = await runTransformBatch(deps.db, { id: transformId, owner, leaseSeconds });
      if (!held) return;
      failing.delete('transform');
      events.emit('transformBatch', { transformId, ...result });
      if (result.completed) {
        logger.info({ transformId, phase: result.phase }, result.phase === 'APPLY' ? 'transform applied' : 'transform undone');
        return;
      }
    }
  };

  const onBatchError = async (kind: JobKind, id: bigint, error: unknown) => {
    const context = { [kind.idKey]: String(id) };
    if (classifyDatabaseError(error)) {
      outage.failed(error, `${kind.name} batch hit database trouble; retrying after the poll interval`, context);
      return;
    }
    const previous = failing.get(kind.name);
    const count = previous?.id === id ? previous.count + 1 : 1;
    failing.set(kind.name, { id, count });
    if (count < maxBatchFailures) {
      logger.error({ err: error, ...context, failures: count }, `${kind.name} batch failed; retrying after the poll interval`);
      return;
    }
    logger.error({ err: error, ...context, failures: count }, `${kind.name} failed; ${kind.afterFailure}`);
    failing.delete(kind.name);
    await kind.fail(id, error instanceof Error ? error.message : String(error));
  };

  const kinds: JobKind[] = [
    {
      name: 'redrive', idKey: 'redriveId', afterFailure: 'resume it once the cause is fixed',
      claim: async () => {
        const claim = await claimRedrive(deps.db, { owner, leaseSeconds });
        return claim && { id: claim.id, drive: (signal) => driveRedrive(claim, signal) };
      },
      fail: (id, e) => failRedrive(deps.db, id, e),
    },
    {
      name: 'transform', idKey: 'transformId', afterFailure: 'undo it to restore what it applied',
      claim: async () => {
        const claim = await claimTransform(deps.db, { owner, leaseSeconds });
        return claim && { id: claim.id, drive: (signal) => driveTransform(claim.id, signal) };
      },
      fail: (id, e) => failTransform(deps.db, id, e),
    },
  ];

  // One poll of a kind: claim a job and drive it to its end, then the next, until none is left.
  const poll = (kind: JobKind) => async (signal: AbortSignal) => {
    while (!signal.aborted) {
      let id: bigint | null = null;
      try {
        const job = await kind.claim();
        outage.answered();
        if (job === null) return;
        id = job.id;
        await job.drive(signal);
      } catch (error) {
        if (id === null) outage.failed(error, `${kind.name} poll failed; retrying after the poll interval`);
        else await onBatchError(kind, id, error).catch((e: unknown) => logger.error({ err: e, [kind.idKey]: String(id) }, `could not mark the ${kind.name} FAILED`));
        return;
      }
    }
  };
  const polling = kinds.map((kind) => startPeriodic({ name: `${kind.name} poll`, everyMs: pollIntervalMs, immediately: true, runOnce: poll(kind), logger }));

  return {
    owner,
    events,
    stop: async () => {
      await Promise.all(polling.map((p) => p.stop()));
    },
  };
}

/** Resolves with the next batch event of `transformId` (test helper for awaiting progress). */
export async function nextTransformBatch(runner: RedriveRunner, transformId: bigint) {
  for (;;) {
    const [event] = await once(runner.events, 'transformBatch');
    if (event.transformId === transformId) return event;
  }
}

/** Resolves with the next batch event of `redriveId` (test helper for awaiting progress). */
export async function nextBatch(runner: RedriveRunner, redriveId: bigint) {
  for (;;) {
    const [event] = await once(runner.events, 'batch');
    if (event.redriveId === redriveId) return event;
  }
}
