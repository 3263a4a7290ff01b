// Alert rules as admins change them: the whole resulting rule is validated, then one write. The
// checks match the CHECK constraints of migration 20261125134500_alerts, and the target gets the
// same SSRF rule as a retry policy's (targetUrlProblem): a private, loopback or metadata address
// is refused unless allowPrivateTarget is set. Every refusal names the field and writes nothing.
import type { Db } from '../db/createDb.ts';
import {
  deleteAlertRuleRow, findAlertRule, findAlertRuleIdByName, findAlertRuleOrThrow, insertAlertRule, updateAlertRuleRow,
} from '../db/models/alerts.ts';
import { insertTestAlert } from '../db/sql/insertTestAlert.ts';
import type { AlertFormat, AlertRule, AlertTrigger } from '../generated/prisma/client.ts';
import { InvalidSettingError } from './errors.ts';
import { targetUrlProblem } from './targetAddress.ts';

/** Triggers compared against a figure, which need a threshold; the others are raised by events. */
export const METRIC_TRIGGERS: readonly AlertTrigger[] = ['EXHAUSTED_RATE', 'OLDEST_PENDING_AGE', 'BACKLOG'];
export const DEFAULT_ALERT_WINDOW_SECONDS = 900;
/** The volume cap: a rule raises at most this many alerts per cap window; the rest go into one digest. */
export const DEFAULT_MAX_ALERTS_PER_WINDOW = 10;
export const DEFAULT_CAP_WINDOW_SECONDS = 300;
const MAX_ALERTS_PER_WINDOW = 100_000;
const MAX_WINDOW_SECONDS = 30 * 86_400;
const MAX_INT = 2_147_483_647;

/** An alert rule an admin asked for that cannot be stored; nothing was written. */
export class InvalidAlertRuleError extends InvalidSettingError {
  override name = 'InvalidAlertRuleError';
}

/** No alert rule has this id. */
export class AlertRuleNotFoundError extends Error {
  override name = 'AlertRuleNotFoundError';
  readonly id: bigint;
  constructor(id: bigint) {
    super(`no alert rule with id ${id}`);
    this.id = id;
  }
}

export interface AlertRuleValues {
  name: string;
  trigger: AlertTrigger;
  /** Required for metric triggers, null for the others. */
  threshold: number | null;
  windowSeconds: number;
  /** At most this many alerts per `capWindowSeconds`; past it they are SUPPRESSED into one digest. */
  maxAlertsPerWindow: number;
  capWindowSeconds: number;
  enabled: boolean;
  targetUrl: string;
  format: AlertFormat;
  signingSecret: string;
  allowPrivateTarget: boolean;
}

export type NewAlertRule = Pick<AlertRuleValues, 'name' | 'trigger' | 'targetUrl' | 'signingSecret'> & Partial<AlertRuleValues>;
/** Fields to change; undefined keeps the current value. */
export type AlertRuleChanges = { [K in keyof AlertRuleValues]?: AlertRuleValues[K] | undefined };

export async function createAlertRule(db: Db, input: NewAlertRule, actor: string): Promise<AlertRule> {
  const rule: AlertRuleValues = {
    threshold: null, windowSeconds: DEFAULT_ALERT_WINDOW_SECONDS, maxAlertsPerWindow: DEFAULT_MAX_ALERTS_PER_WINDOW,
    capWindowSeconds: DEFAULT_CAP_WINDOW_SECONDS, enabled: true, format: 'STANDARD', allowPrivateTarget: false,
    ...withoutUndefined(input),
  } as AlertRuleValues;
  assertRule(rule);
  await assertNameFree(db, rule.name, null);
  return insertAlertRule(db, { ...rule, updatedBy: actor }).catch(rethrowDuplicateName(rule.name));
}

/** Changes a rule; a rule moved to an event trigger drops its threshold. */
export async function updateAlertRule(db: Db, id: bigint, changes: AlertRuleChanges, actor: string): Promise<AlertRule> {
  const current = await findAlertRule(db, id);
  if (!current) throw new AlertRuleNotFoundError(id);
  const next: AlertRuleValues = {
    name: current.name, trigger: current.trigger, threshold: current.threshold, windowSeconds: current.windowSeconds,
    maxAlertsPerWindow: current.maxAlertsPerWindow, capWindowSeconds: current.capWindowSeconds,
    enabled: current.enabled, targetUrl: current.targetUrl, format: current.format, signingSecret: current.signingSecret,
    allowPrivateTarget: current.allowPrivateTarget, ...withoutUndefined(changes),
  };
  if (!METRIC_TRIGGERS.includes(next.trigger) && changes.threshold === undefined) next.threshold = null;
  assertRule(next);
  await assertNameFree(db, next.name, id);
  const updated = await updateAlertRuleRow(db, id, { ...next, updatedBy: actor }).catch(rethrowDuplicateName(next.name));
  if (updated.count === 0) throw new AlertRuleNotFoundError(id);
  return findAlertRuleOrThrow(db, id);
}

/** Deletes a rule; its alerts stay in the history under its name, and undelivered ones end FAILED. */
export async function deleteAlertRule(db: Db, id: bigint): Promise<AlertRule> {
  const rule = await findAlertRule(db, id);
  const deleted = rule ? await deleteAlertRuleRow(db, id) : { count: 0 };
  if (!rule || deleted.count === 0) throw new AlertRuleNotFoundError(id);
  return rule;
}

/**
 * Queues a test alert through rule `id`'s channel now: subject `test`, the rule's trigger, details
 * `{ test: true, sentBy }`, whether or not the rule is enabled and without touching its throttle, so an
 * admin can check the target answers. It is delivered, retried and recorded like any alert.
 */
export async function sendTestAlert(db: Db, id: bigint, actor: string): Promise<bigint> {
  const alertId = await insertTestAlert(db, {
    ruleId: id, summary: `Test alert sent by ${actor}: checking this rule's target`, details: { test: true, sentBy: actor },
  });
  if (alertId === null) throw new AlertRuleNotFoundError(id);
  return alertId;
}

/** A create or rename that lost a race for the name to another admin's. */
function rethrowDuplicateName(name: string) {
  return (error: unknown): never => {
    if ((error as { code?: string }).code === 'P2002') {
      throw new InvalidAlertRuleError('name', 'DUPLICATE_NAME', `an alert rule named "${name}" already exists`);
    }
    throw error;
  };
}

async function assertNameFree(db: Db, name: string, id: bigint | null) {
  const other = await findAlertRuleIdByName(db, name, id);
  if (other) throw new InvalidAlertRuleError('name', 'DUPLICATE_NAME', `an alert rule named "${name}" already exists`);
}

function assertRule(r: AlertRuleValues) {
  if (typeof r.name !== 'string' || r.name.trim().length === 0 || r.name.length > 200) {
    throw new InvalidAlertRuleError('name', 'INVALID_NAME', 'name must be 1–200 characters, not only spaces');
  }
  const isMetric = METRIC_TRIGGERS.includes(r.trigger);
  if (isMetric && r.threshold === null) {
    throw new InvalidAlertRuleError('threshold', 'THRESHOLD_REQUIRED', `a ${r.trigger} rule needs a threshold`);
  }
  if (!isMetric && r.threshold !== null) {
    throw new InvalidAlertRuleError('threshold', 'THRESHOLD_NOT_ALLOWED', `a ${r.trigger} rule takes no threshold (it fires on the event)`);
  }
  if (r.threshold !== null) range('threshold', r.threshold, 0, MAX_INT);
  range('windowSeconds', r.windowSeconds, 1, MAX_WINDOW_SECONDS);
  range('maxAlertsPerWindow', r.maxAlertsPerWindow, 1, MAX_ALERTS_PER_WINDOW);
  range('capWindowSeconds', r.capWindowSeconds, 1, MAX_WINDOW_SECONDS);
  if (typeof r.signingSecret !== 'string' || r.signingSecret.length < 16 || r.signingSecret.length > 500) {
    throw new InvalidAlertRuleError('signingSecret', 'INVALID_SECRET', 'signingSecret must be 16–500 characters');
  }
  if (r.signingSecret.startsWith('whsec_') && !/^[A-Za-z0-9+/]+={0,2}$/.test(r.signingSecret.slice(6))) {
    throw new InvalidAlertRuleError('signingSecret', 'INVALID_SECRET', 'a whsec_ secret must be base64 after the prefix');
  }
  const problem = targetUrlProblem(r.targetUrl, r.allowPrivateTarget);
  if (problem) throw new InvalidAlertRuleError('targetUrl', problem.reason, problem.message);
}

function range(field: string, value: number, min: number, max: number) {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidAlertRuleError(field, 'OUT_OF_RANGE', `${field} must be an integer between ${min} and ${max}`);
  }
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
