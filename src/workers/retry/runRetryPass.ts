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
// PENDING with the attempt refunded). Database errors while recording are logged; the lease then
// expires and the event is claimed again. A pass never throws for a delivery; it throws only when
// the claim fails (claimed events then wait for their lease to expire).
import type { Db } from '../../db/createDb.ts';
import { claimDueDeadLetters, type ClaimedDeadLetter } from '../../db/sql/claimDueDeadLetters.ts';
import { completeDeliveries, type AttemptRecord } from '../../db/sql/completeDelivery.ts';
import { failDeliveries, type FailureRecord } from '../../db/sql/failDelivery.ts';
import { releaseLeases } from '../../db/sql/releaseLeases.ts';
import { renewLeases } from '../../db/sql/renewLeases.ts';
import { nextAttemptDelayMs } from '../../domain/retryPolicy.ts';
import type { RetryPolicy } from '../../generated/prisma/client.ts';
import type { Logger } from '../../logger.ts';
import type { Deliver, DeliveryResult } from './delivery.ts';
import type { RetryMetrics } from './metrics.ts';
import { createSlots, type Slots } from './slots.ts';

export interface RetryPassConfig {
  workerId: string;
  batchSize: number;
  /** Deliveries in flight at once in this process. */
  concurrency: number;
  leaseSeconds: number;
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
/** Outcomes are written in batches: one statement per `batchSize` of them, or per flush interval. */
const OUTCOME_FLUSH_MS = 50;

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
  const claimed = await claimDueDeadLetters(db, {
    limit: config.batchSize, workerId: config.workerId, leaseSeconds: config.leaseSeconds,
    inProcessEventTypes: deps.inProcessEventTypes ?? [],
  });
  summary.claimed = claimed.length;
  deps.metrics?.observeClaimed(claimed.length);
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
    try {
      const kept = new Set(await renewLeases(db, leases, config.leaseSeconds));
      for (const l of leases) if (!kept.has(l.id)) held.get(l.id)?.lost.abort();
    } catch (error) {
      logger.warn({ err: error }, 'lease renewal failed; leases may expire');
    }
  }

  // Flushed outcomes leave `held` only once written, so renewal keeps covering them meanwhile.
  const completions: Completion[] = [];
  const failures: Failure[] = [];
  const flushCompletions = async () => {
    const batch = completions.splice(0);
    if (batch.length === 0) return;
    try {
      const written = await inTurn(() => completeDeliveries(db, batch.map((c) => c.record)));
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
      const written = await inTurn(() => failDeliveries(db, batch.map((f) => f.record)));
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
  const flusher = setInterval(() => void flush(), OUTCOME_FLUSH_MS);

  const queue = [...claimed];
  const slots = deps.slots ?? createSlots(config.concurrency);
  const worker = async () => {
    while (queue.length > 0 && (await slots.acquire(drain))) {
      try {
        const event = queue.shift();
        if (!event) return;
        if (queue.length === 0) deps.onAllStarted?.(claimed.length);
        await deliverAndRecord(event);
      } finally {
        slots.release();
      }
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
    if (completions.length + failures.length >= config.batchSize) await flush();
  }
  try {
    await Promise.all(Array.from({ length: Math.min(config.concurrency, claimed.length) }, worker));
  } finally {
    clearInterval(flusher);
    await flush();
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
      const onAbort = () => resolve({
        ok: false, outcome: 'TIMED_OUT', errorMessage: `no response within ${policy.timeoutMs} ms`,
        statusCode: null, responseBody: null, retryAfterMs: null,
      });
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
    statusCode: result.statusCode, responseBody: result.responseBody,
  };
}

function failureRecord(deps: RetryPassDeps, event: ClaimedDeadLetter, policy: RetryPolicy, result: Extract<DeliveryResult, { ok: false }>): FailureRecord {
  return {
    ...attemptRecord(deps, event, result), outcome: result.outcome, errorMessage: result.errorMessage,
    delayMs: result.retryAfterMs ?? nextAttemptDelayMs(policy, event.attempts, deps.random ?? Math.random),
    isPermanent: result.outcome === 'PERMANENT_FAILURE', policyMaxAttempts: policy.maxAttempts,
  };
}

function lost(deps: RetryPassDeps, summary: RetryPassSummary): string {
  summary.leaseLost += 1;
  deps.metrics?.observeLeaseLost(1);
  return 'LEASE_LOST';
}
