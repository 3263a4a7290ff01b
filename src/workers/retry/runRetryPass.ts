// One pass: claim a batch → deliver it with at most `concurrency` in flight (counted across the
// passes that share `slots`) → record each outcome under the lease's fencing token. Leases of the
// batch are renewed while it runs.
// Outcomes are buffered and written together (one statement for the successes and one for the
// failures, per batch or every 50 ms), and keep their lease renewed until written: a redrive into
// a receiver that is half down drains its failures as fast as its successes.
//
// Per event: CLAIMED (attempt charged) → DELIVERING → recorded SUCCEEDED | PENDING | EXHAUSTED,
// or LOST (renewal or the fenced write found another token: nothing written, counted), or
// RELEASED on shutdown (drain signal before it started, or abort signal while in flight: back to
// PENDING with the attempt refunded). An outcome write that fails because the database went away
// (a restart, a terminated connection) is retried with backoff while the batch's leases still
// hold: the write is fenced, so a retry can never overwrite another owner's result, and an outcome
// given up to lease expiry is a delivery made twice. Other database errors while recording, and
// those still failing when the leases run out, are logged; the lease then expires and the event is
// claimed again. A pass never throws for a delivery; it throws only when the claim fails (claimed
// events then wait for their lease to expire).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../db/createDb.ts';
import { isDatabaseUnreachable } from '../../db/outageLog.ts';
import { claimDueDeadLetters, type ClaimedDeadLetter } from '../../db/sql/claimDueDeadLetters.ts';
import { completeDeliveries, type AttemptRecord } from '../../db/sql/completeDelivery.ts';
import { failDeliveries, type FailureRecord } from '../../db/sql/failDelivery.ts';
import { releaseLeases } from '../../db/sql/releaseLeases.ts';
import { renewLeases } from '../../db/sql/renewLeases.ts';
import { cutText, MAX_ERROR_MESSAGE_BYTES } from '../../domain/attemptDetails.ts';
import { nextAttemptDelayMs } from '../../domain/retryPolicy.ts';
import type { RetryPolicy } from '../../generated/prisma/client.ts';
import type { Logger } from '../../logger.ts';
import { attemptDetails, permanentRuleOf } from './attemptRecord.ts';
import type { Deliver, DeliveryResult } from './delivery.ts';
import type { RetryMetrics } from './metrics.ts';
import { createSlots, type Slots } from './slots.ts';

export interface RetryPassConfig {
  workerId: string;
  batchSize: number;
  /** Deliveries in flight at once in this process. */
  concurrency: number;
  leaseSeconds: number;
  /** The longest an outcome waits to be written while its batch still delivers. Default DEFAULT_OUTCOME_FLUSH_MS. */
  outcomeFlushMs?: number;
}

export interface RetryPassDeps {
  db: Db;
  deliver: Deliver;
  config: RetryPassConfig;
  logger: Logger;
  inProcessEventTypes?: readonly string[];
  /** [0, 1) source for backoff jitter; default Math.random. */
  random?: () => number;
  /** Stop starting deliveries; what has not started is released. */
  drainSignal?: AbortSignal;
  /** Give up on in-flight deliveries; they are released, not recorded. */
  abortSignal?: AbortSignal;
  metrics?: RetryMetrics;
  /** Delivery slots shared with other passes alive at once; default: `concurrency` of this pass's own. */
  slots?: Slots;
  /** Called once every claimed event has a slot (its delivery started), with the claim's size. */
  onAllStarted?: (claimed: number) => void;
  /** Called as soon as the claim returns, with its size, before any delivery starts (claim ahead). */
  onClaimed?: (claimed: number) => void;
  /** Called after each delivery finishes, whatever its outcome. */
  onDelivered?: () => void;
  /** Called once no delivery of this pass is running or left to start (its last outcomes may still be written). */
  onDeliveriesDone?: () => void;
  /** Called when a failure puts an event back to PENDING, with its wait before the next attempt. */
  onRetryScheduled?: (delayMs: number) => void;
}

export interface RetryPassSummary {
  claimed: number;
  succeeded: number;
  retried: number;
  exhausted: number;
  leaseLost: number;
  released: number;
  recordFailed: number;
}

const NEVER = new AbortController().signal;
/**
 * Outcomes are written in batches: one statement per `batchSize` of them, or per flush interval.
 * A longer interval (250 ms: one statement per batch of a fast target) lost to this one with
 * claiming ahead: the claim and the larger completion then ran side by side and each took twice as
 * long, 379 against 593 events/s (bench:retry:pipeline, medians of 3 interleaved runs at load 20–26).
 */
export const DEFAULT_OUTCOME_FLUSH_MS = 50;
/** Backoff of an outcome write retried after the database went away: doubling from 50 ms to 1 s. */
const RECORD_RETRY_FIRST_MS = 50;
const RECORD_RETRY_MAX_MS = 1_000;

interface Completion {
  record: AttemptRecord;
  eventType: string;
}

interface Failure {
  record: FailureRecord;
  eventType: string;
}

export async function runRetryPass(deps: RetryPassDeps): Promise<RetryPassSummary> {
  const { db, config, logger } = deps;
  const summary: RetryPassSummary = { claimed: 0, succeeded: 0, retried: 0, exhausted: 0, leaseLost: 0, released: 0, recordFailed: 0 };
  const drain = deps.drainSignal ?? NEVER;
  const abort = deps.abortSignal ?? NEVER;
  if (drain.aborted) return summary;
  const leaseMs = config.leaseSeconds * 1000;
  // By this process's clock, taken before the claim: the database's expiry is no earlier.
  let leasesHeldUntil = Date.now() + leaseMs;
  const claimed = await claimDueDeadLetters(db, {
    limit: config.batchSize, workerId: config.workerId, leaseSeconds: config.leaseSeconds,
    inProcessEventTypes: deps.inProcessEventTypes ?? [],
  });
  summary.claimed = claimed.length;
  deps.metrics?.observeClaimed(claimed.length);
  deps.onClaimed?.(claimed.length);
  if (claimed.length === 0) return summary;

  const held = new Map(claimed.map((c) => [c.id, { event: c, lost: new AbortController() }]));
  // Renewals, batched completions and the final release each update many of this pass's rows in
  // one statement; run at the same time they could lock those rows in different orders and
  // deadlock (40P01, seen in bench:retry:webhook at shutdown), so they take turns.
  let writes: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(write: () => Promise<T>): Promise<T> => {
    const next = writes.then(write, write);
    writes = next.catch(() => {});
    return next;
  };
  const renewal = setInterval(() => void inTurn(renew), (config.leaseSeconds * 1000) / 3);
  async function renew() {
    const leases = [...held.values()].map((h) => ({ id: h.event.id, leaseToken: h.event.leaseToken }));
    const renewedAt = Date.now();
    try {
      const kept = new Set(await renewLeases(db, leases, config.leaseSeconds));
      leasesHeldUntil = renewedAt + leaseMs;
      for (const l of leases) if (!kept.has(l.id)) held.get(l.id)?.lost.abort();
    } catch (error) {
      logger.warn({ err: error }, 'lease renewal failed; leases may expire');
    }
  }

  /** An outcome write, retried with backoff while the database is away and the leases hold. */
  async function writeOutcomes<T>(write: () => Promise<T>): Promise<T> {
    for (let delayMs = RECORD_RETRY_FIRST_MS; ; delayMs = Math.min(2 * delayMs, RECORD_RETRY_MAX_MS)) {
      try {
        return await inTurn(write);
      } catch (error) {
        if (!isDatabaseUnreachable(error) || abort.aborted || Date.now() + delayMs >= leasesHeldUntil) throw error;
        await sleep(delayMs, undefined, { signal: abort }).catch(() => {
          throw error;
        });
      }
    }
  }

  // Flushed outcomes leave `held` only once written, so renewal keeps covering them meanwhile.
  const completions: Completion[] = [];
  const failures: Failure[] = [];
  const flushCompletions = async () => {
    const batch = completions.splice(0);
    if (batch.length === 0) return;
    try {
      const written = await writeOutcomes(() => completeDeliveries(db, batch.map((c) => c.record)));
      for (const c of batch) {
        held.delete(c.record.id);
        if (written.has(c.record.id)) {
          summary.succeeded += 1;
          deps.metrics?.observeAttempt(c.eventType, 'SUCCEEDED', c.record.durationMs);
        } else {
          lost(deps, summary);
        }
      }
    } catch (error) {
      for (const c of batch) held.delete(c.record.id);
      summary.recordFailed += batch.length;
      logger.error({ err: error, count: batch.length }, 'recording successful deliveries failed; their leases will expire');
    }
  };
  const flushFailures = async () => {
    const batch = failures.splice(0);
    if (batch.length === 0) return;
    try {
      const written = await writeOutcomes(() => failDeliveries(db, batch.map((f) => f.record)));
      for (const { record, eventType } of batch) {
        held.delete(record.id);
        const status = written.get(record.id);
        if (status === 'PENDING') {
          summary.retried += 1;
          deps.onRetryScheduled?.(record.delayMs);
        } else if (status === 'EXHAUSTED') summary.exhausted += 1;
        deps.metrics?.observeAttempt(eventType, status ? record.outcome : lost(deps, summary), record.durationMs);
      }
    } catch (error) {
      for (const f of batch) held.delete(f.record.id);
      summary.recordFailed += batch.length;
      logger.error({ err: error, count: batch.length }, 'recording failed deliveries failed; their leases will expire');
    }
  };
  const flush = () => Promise.all([flushCompletions(), flushFailures()]);
  // A flush runs beside the deliveries: no worker waits for it (the writes take turns in `inTurn`).
  const flushing = new Set<Promise<unknown>>();
  const flushSoon = () => {
    const f = flush();
    flushing.add(f);
    void f.finally(() => flushing.delete(f));
  };
  const flusher = setInterval(flushSoon, config.outcomeFlushMs ?? DEFAULT_OUTCOME_FLUSH_MS);

  const queue = [...claimed];
  const slots = deps.slots ?? createSlots(config.concurrency);
  // A worker keeps its slot from event to event until this pass's queue is empty, so a pass claimed
  // ahead waits for the slots of the pass before it instead of taking turns with it: the older pass
  // ends first, and the next claim is made while the younger one still has a batch to deliver.
  const worker = async () => {
    if (!(await slots.acquire(drain))) return;
    try {
      while (queue.length > 0 && !drain.aborted) {
        const event = queue.shift()!;
        if (queue.length === 0) deps.onAllStarted?.(claimed.length);
        await deliverAndRecord(event);
        deps.onDelivered?.();
      }
    } finally {
      slots.release();
    }
  };
  async function deliverAndRecord(event: ClaimedDeadLetter) {
    const entry = held.get(event.id)!;
    const { policy } = event;
    const result = await deliverWithin(deps.deliver, event, policy, [entry.lost.signal, abort]);
    if (abort.aborted) return; // left in `held`: released below
    if (entry.lost.signal.aborted) {
      held.delete(event.id);
      lost(deps, summary);
      return;
    }
    if (result.ok) completions.push({ record: attemptRecord(deps, event, result), eventType: event.eventType });
    else failures.push({ record: failureRecord(deps, event, policy, result), eventType: event.eventType });
    if (completions.length + failures.length >= config.batchSize) flushSoon();
  }
  try {
    await Promise.all(Array.from({ length: Math.min(config.concurrency, claimed.length) }, worker));
  } finally {
    deps.onDeliveriesDone?.();
    clearInterval(flusher);
    await Promise.all([flush(), ...flushing]);
    clearInterval(renewal);
    if (held.size > 0) {
      const leases = [...held.values()].map((h) => ({ id: h.event.id, leaseToken: h.event.leaseToken }));
      summary.released = await inTurn(() => releaseLeases(db, leases)).catch((error: unknown) => {
        logger.error({ err: error, count: leases.length }, 'releasing leases failed; they will expire');
        return 0;
      });
    }
  }
  return summary;
}

/**
 * Runs one delivery with a signal that aborts when any of `stops` does or the policy's timeout
 * passes. One controller, one timer and plain listeners, removed afterwards: AbortSignal.any and
 * AbortSignal.timeout per delivery cost ~9 us of a no-op delivery's ~11 (bench:retry).
 */
async function deliverWithin(deliver: Deliver, event: ClaimedDeadLetter, policy: RetryPolicy, stops: AbortSignal[]): Promise<DeliveryResult> {
  const controller = new AbortController();
  const { signal } = controller;
  const forward = function (this: AbortSignal) {
    controller.abort(this.reason);
  };
  for (const stop of stops) {
    if (stop.aborted) controller.abort(stop.reason);
    else stop.addEventListener('abort', forward, { once: true });
  }
  const timer = setTimeout(() => controller.abort(new DOMException('The delivery timed out.', 'TimeoutError')), policy.timeoutMs);
  const started = Date.now();
  try {
    // A handler that ignores its signal must not hold the pass: the race ends it at the timeout.
    const aborted = new Promise<DeliveryResult>((resolve) => {
      // A turn of the event loop later, so that a delivery that heeds its signal answers first,
      // with what it sent (its request) beside the timeout.
      const onAbort = () => setImmediate(() => resolve({
        ok: false, outcome: 'TIMED_OUT', errorMessage: `no response within ${policy.timeoutMs} ms`,
        statusCode: null, responseBody: null, retryAfterMs: null, failureKind: 'TIMEOUT',
      }));
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    const result = await Promise.race([deliver(event, policy, signal).catch((error: unknown): DeliveryResult => ({
      ok: false, outcome: 'FAILED', errorMessage: String((error as Error)?.message ?? error), statusCode: null, responseBody: null, retryAfterMs: null,
    })), aborted]);
    return Object.assign(result, { durationMs: Date.now() - started });
  } finally {
    clearTimeout(timer);
    for (const stop of stops) stop.removeEventListener('abort', forward);
  }
}

function attemptRecord(deps: RetryPassDeps, event: ClaimedDeadLetter, result: DeliveryResult): AttemptRecord {
  return {
    id: event.id, leaseToken: event.leaseToken, workerId: deps.config.workerId,
    durationMs: Math.min((result as { durationMs?: number }).durationMs ?? 0, 2_147_483_647),
    statusCode: result.statusCode, ...attemptDetails(result),
  };
}

function failureRecord(deps: RetryPassDeps, event: ClaimedDeadLetter, policy: RetryPolicy, result: Extract<DeliveryResult, { ok: false }>): FailureRecord {
  return {
    ...attemptRecord(deps, event, result), outcome: result.outcome, errorMessage: cutText(result.errorMessage, MAX_ERROR_MESSAGE_BYTES),
    failureKind: result.failureKind ?? null, permanentRule: permanentRuleOf(result),
    delayMs: result.retryAfterMs ?? nextAttemptDelayMs(policy, event.attempts, deps.random ?? Math.random),
    isPermanent: result.outcome === 'PERMANENT_FAILURE', policyMaxAttempts: policy.maxAttempts,
  };
}

function lost(deps: RetryPassDeps, summary: RetryPassSummary): string {
  summary.leaseLost += 1;
  deps.metrics?.observeLeaseLost(1);
  return 'LEASE_LOST';
}
