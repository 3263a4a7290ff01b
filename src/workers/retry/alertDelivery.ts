// The alert deliverer: the outbox loop for raised alerts (migration 20261125134500_alerts), built
// from the retry loop's parts: the same signed POST with its SSRF checks (createWebhookPoster), the
// same backoff (nextAttemptDelayMs, full jitter, Retry-After honoured) and the same claim shape
// (a lease, FOR UPDATE SKIP LOCKED), so several processes deliver each alert once at a time and a
// crashed deliverer's alerts are claimed again when their lease expires.
//
// It runs on the work loop (runtime/workLoop.ts), as the retry loop does.
// States: RUNNING → (stop()) DRAINING → STOPPED.
//  RUNNING  a pass claims up to `batchSize` due alerts, delivers them concurrently and records
//           each outcome under the lease; a full batch is followed by another pass at once,
//           otherwise it waits for a wake-up (NOTIFY lazarus_alerts, sent by every raise at
//           commit), the moment the earliest alert becomes due (asked of the database, whose
//           clock set it), or `pollIntervalMs`, whichever is first.
//           A failed pass is reported to the outage log and retried after the wait.
//  DRAINING stop() ends the wait and claims nothing more; deliveries in flight get
//           `shutdownTimeoutMs` to finish (aborting one whose request already arrived would send
//           it twice), then are aborted and recorded as a retry due at once, the attempt counted.
//  STOPPED  stop() has resolved: the pass has returned.
// Events: `passCompleted` ({ claimed }) after every pass, `passFailed` (error), `finished` (AlertFinished)
// after each recorded outcome.
import type { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/createDb.ts';
import { createOutageLog, type OutageLog } from '../../db/outageLog.ts';
import { claimDueAlerts, type ClaimedAlert } from '../../db/sql/claimDueAlerts.ts';
import { finishAlertDelivery, type AlertDeliveryOutcome } from '../../db/sql/finishAlertDelivery.ts';
import { msUntilNextAlertDue } from '../../db/sql/msUntilNextAlertDue.ts';
import { alertBody, alertWebhookId } from '../../domain/alerts.ts';
import { nextAttemptDelayMs, type BackoffPolicy } from '../../domain/retryPolicy.ts';
import type { Logger } from '../../logger.ts';
import { startWorkLoop } from '../../runtime/workLoop.ts';
import { createWebhookPoster, type PostWebhook } from '../targets/webhook.ts';

export const DEFAULT_ALERT_MAX_ATTEMPTS = 12;
export const DEFAULT_ALERT_BACKOFF: BackoffPolicy = Object.freeze({ backoff: 'EXPONENTIAL', baseDelayMs: 1_000, maxDelayMs: 600_000 });
export const DEFAULT_ALERT_TIMEOUT_MS = 10_000;
export const DEFAULT_ALERT_POLL_INTERVAL_MS = 1_000;
const DEFAULT_LEASE_SECONDS = 30;
const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;
const DEFAULT_BATCH_SIZE = 10;
/** The retry policies' default permanent statuses: retrying cannot help. */
const PERMANENT_STATUS_CODES = [400, 401, 403, 404, 405, 410, 413, 415, 422];

export interface AlertDeliveryDeps {
  db: Db;
  logger: Logger;
  /** Default: a signed POST with the SSRF checks (createWebhookPoster). */
  post?: PostWebhook;
  /** Subscribes to wake-ups (the listener's lazarus_alerts); returns an unsubscribe function. */
  wake?: (fn: () => void) => () => void;
  outage?: OutageLog;
  owner?: string;
  pollIntervalMs?: number;
  leaseSeconds?: number;
  batchSize?: number;
  maxAttempts?: number;
  backoff?: BackoffPolicy;
  timeoutMs?: number;
  /** How long stop() lets deliveries in flight finish before aborting them. Default 10000 ms. */
  shutdownTimeoutMs?: number;
  random?: () => number;
}

export interface AlertFinished {
  id: bigint;
  attempt: number;
  outcome: AlertDeliveryOutcome;
}

export interface AlertDelivery {
  /** Emits `passCompleted` ({ claimed }), `passFailed` (error) and `finished` (AlertFinished). */
  readonly events: EventEmitter;
  poke(): void;
  stop(): Promise<void>;
}

export function startAlertDelivery(deps: AlertDeliveryDeps): AlertDelivery {
  const owner = deps.owner ?? `alerts-${randomUUID()}`;
  const logger = deps.logger.child({ component: 'alerts', owner });
  const outage = deps.outage ?? createOutageLog(logger);
  const post = deps.post ?? createWebhookPoster();
  const batchSize = deps.batchSize ?? DEFAULT_BATCH_SIZE;
  const deliverOne = async (alert: ClaimedAlert, abort: AbortSignal): Promise<void> => {
    const outcome = await outcomeOf(alert, abort);
    const written = await finishAlertDelivery(deps.db, { id: alert.id, owner, outcome });
    if (!written) logger.warn({ alertId: alert.id.toString() }, 'alert lease lost before its outcome was written; another deliverer has it');
    else loop.events.emit('finished', { id: alert.id, attempt: alert.attempt, outcome } satisfies AlertFinished);
  };

  const outcomeOf = async (alert: ClaimedAlert, abort: AbortSignal): Promise<AlertDeliveryOutcome> => {
    if (!alert.channel) return { kind: 'FAILED', error: 'the alert rule was deleted', statusCode: null };
    const result = await post({
      url: alert.channel.targetUrl, id: alertWebhookId(alert.id), body: alertBody(alert, alert.channel.format),
      secret: alert.channel.signingSecret, allowPrivateTarget: alert.channel.allowPrivateTarget,
      timeoutMs: deps.timeoutMs ?? DEFAULT_ALERT_TIMEOUT_MS, permanentStatusCodes: PERMANENT_STATUS_CODES,
    }, abort);
    if (result.ok) return { kind: 'DELIVERED', statusCode: result.statusCode };
    const error = result.errorMessage;
    if (abort.aborted) return { kind: 'RETRY', error: 'the deliverer stopped during the attempt', statusCode: null, delayMs: 0 };
    if (result.outcome === 'PERMANENT_FAILURE' || alert.attempt >= (deps.maxAttempts ?? DEFAULT_ALERT_MAX_ATTEMPTS)) {
      return { kind: 'FAILED', error, statusCode: result.statusCode };
    }
    const delayMs = result.retryAfterMs ?? nextAttemptDelayMs(deps.backoff ?? DEFAULT_ALERT_BACKOFF, alert.attempt, deps.random ?? Math.random);
    return { kind: 'RETRY', error, statusCode: result.statusCode, delayMs };
  };


  const loop = startWorkLoop({
    name: 'alert delivery',
    batchSize,
    pollIntervalMs: deps.pollIntervalMs ?? DEFAULT_ALERT_POLL_INTERVAL_MS,
    shutdownTimeoutMs: deps.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS,
    report: outage,
    ...(deps.wake && { wake: deps.wake }),
    msUntilNextDue: () => msUntilNextAlertDue(deps.db),
    runPass: async ({ abort }) => {
      const alerts = await claimDueAlerts(deps.db, { owner, leaseSeconds: deps.leaseSeconds ?? DEFAULT_LEASE_SECONDS, limit: batchSize });
      await Promise.all(alerts.map((alert) => deliverOne(alert, abort)));
      return { claimed: alerts.length };
    },
  });
  return loop;
}
