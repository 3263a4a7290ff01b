// Raising alerts, and what an alert says. raiseAlert is the one entry point for event-driven
// triggers: the error-group folder reaches the same SQL function from the database
// (lazarus_raise_alert, migration 20261125134500_alerts), the redrive guard calls raiseAlert right
// after it pauses a redrive, and the metric evaluator (src/workers/alertEvaluation.ts) calls raiseMetricAlert.
import type { Db, DbTx } from '../db/createDb.ts';
import type { ClaimedAlert } from '../db/sql/claimDueAlerts.ts';
import { raiseAlertRows } from '../db/sql/raiseAlert.ts';
import type { AlertFormat, AlertTrigger } from '../generated/prisma/enums.ts';
import { ValidationError } from './errors.ts';

export type EventAlertTrigger = 'NEW_GROUP' | 'REGRESSION' | 'REDRIVE_PAUSED';
export type MetricAlertTrigger = 'EXHAUSTED_RATE' | 'OLDEST_PENDING_AGE' | 'BACKLOG';

export interface RaiseAlertInput {
  trigger: EventAlertTrigger;
  /** The error group's id (NEW_GROUP, REGRESSION) or the redrive's (REDRIVE_PAUSED). */
  subjectId: bigint | number | string;
  /** One line for people: what happened. Cut to 2,000 characters. */
  summary: string;
  /** Anything the receiver may want (counts, ids, reasons): a JSON object. */
  details?: Record<string, unknown>;
}

const MAX_DETAILS_BYTES = 16 * 1024;
const MAX_BIGINT = 9_223_372_036_854_775_807n;

/** The throttle subject of an alert: `group:<id>`, `redrive:<id>` or `global`. */
export function alertSubject(trigger: AlertTrigger, subjectId: bigint | null): string {
  if (trigger === 'NEW_GROUP' || trigger === 'REGRESSION') return `group:${subjectId}`;
  if (trigger === 'REDRIVE_PAUSED') return `redrive:${subjectId}`;
  return 'global';
}

/**
 * Raises `trigger` for one group or redrive in `db`'s transaction: one alert per enabled rule of
 * that trigger, unless the rule already raised for this subject within its window. The alert is
 * delivered after the transaction commits (and not at all if it rolls back). Returns the ids of
 * the alerts raised (empty when throttled or when no rule matches). Throws ValidationError, having
 * written nothing, for an unknown trigger, a subject id that is not a positive 64-bit integer, an
 * empty summary, or details that are not a JSON object of at most 16 KiB.
 */
export async function raiseAlert(db: Db | DbTx, input: RaiseAlertInput): Promise<bigint[]> {
  if (!['NEW_GROUP', 'REGRESSION', 'REDRIVE_PAUSED'].includes(input.trigger)) {
    throw new ValidationError('trigger', 'must be NEW_GROUP, REGRESSION or REDRIVE_PAUSED (metric triggers are evaluated, not raised)');
  }
  const subjectId = parseSubjectId(input.subjectId);
  if (typeof input.summary !== 'string' || input.summary.trim() === '') throw new ValidationError('summary', 'must not be empty');
  const details = input.details ?? {};
  if (typeof details !== 'object' || details === null || Array.isArray(details)) throw new ValidationError('details', 'must be a JSON object');
  if (Buffer.byteLength(JSON.stringify(details)) > MAX_DETAILS_BYTES) throw new ValidationError('details', 'must be at most 16 KiB as JSON');
  return raiseAlertRows(db, {
    trigger: input.trigger, subject: alertSubject(input.trigger, subjectId), summary: input.summary.replaceAll('\u0000', ''), details,
  });
}

/** Raises a metric trigger for one rule (subject `global`), throttled like any other. */
export function raiseMetricAlert(db: Db, p: { ruleId: bigint; trigger: MetricAlertTrigger; summary: string; details: Record<string, unknown> }): Promise<bigint[]> {
  return raiseAlertRows(db, { trigger: p.trigger, subject: 'global', summary: p.summary, details: p.details, onlyRuleId: p.ruleId });
}

function parseSubjectId(value: bigint | number | string): bigint {
  const text = String(value);
  if (!/^[1-9][0-9]{0,18}$/.test(text) || BigInt(text) > MAX_BIGINT) {
    throw new ValidationError('subjectId', 'must be a positive 64-bit integer id');
  }
  return BigInt(text);
}

export interface MetricFigures {
  exhaustedLastMinute: number;
  oldestPendingAgeSeconds: number;
  backlog: number;
}

/** The figure a metric trigger compares, and its unit for the summary. */
export function metricValue(trigger: MetricAlertTrigger, figures: MetricFigures): { value: number; unit: string } {
  switch (trigger) {
    case 'EXHAUSTED_RATE':
      return { value: figures.exhaustedLastMinute, unit: 'exhausted events in the last minute' };
    case 'OLDEST_PENDING_AGE':
      return { value: Math.floor(figures.oldestPendingAgeSeconds), unit: 'seconds since the oldest pending event became due' };
    case 'BACKLOG':
      return { value: figures.backlog, unit: 'pending events' };
  }
}

/** What an alert says: the claimed alert without its channel. */
export type AlertMessage = Omit<ClaimedAlert, 'channel'>;

/** The webhook-id of an alert: the same on every attempt, distinct from dead letters' numeric ids. */
export function alertWebhookId(alertId: bigint): string {
  return `alert_${alertId}`;
}

/** The JSON body a rule's channel receives: the alert as data (STANDARD) or Slack's `{ text }` (SLACK). */
export function alertBody(alert: AlertMessage, format: AlertFormat): string {
  if (format === 'SLACK') {
    const text = `:rotating_light: *${alert.trigger}* ${alert.summary} (rule "${alert.ruleName}", ${alert.subject})`;
    return JSON.stringify({ text: escapeSlack(text) });
  }
  return JSON.stringify({
    id: alertWebhookId(alert.id), type: 'lazarus.alert', trigger: alert.trigger, subject: alert.subject, summary: alert.summary,
    details: alert.details, rule: { id: alert.ruleId?.toString() ?? null, name: alert.ruleName },
    attempt: alert.attempt, createdAt: alert.createdAt.toISOString(),
  });
}

/** Slack reads `<…>` as links and mentions; its docs ask for exactly these three escapes. */
function escapeSlack(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
