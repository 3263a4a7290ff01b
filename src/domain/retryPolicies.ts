// Retry policies as admins change them: validation of the whole resulting policy, then one
// write. A new type's policy starts as a copy of the default ('*') row.
import type { Db } from '../db/createDb.ts';
import type { Queryable } from '../db/sql/queryable.ts';
import { findRetryPoliciesOf, saveRetryPolicy } from '../db/models/retryPolicies.ts';
import { Prisma, type BackoffKind, type ErrorKind, type RetryPolicy } from '../generated/prisma/client.ts';
import { InvalidSettingError } from './errors.ts';
import { parseTarget, type Target, type TargetKindSpecs } from './retryTarget.ts';

export const DEFAULT_POLICY_EVENT_TYPE = '*';
const EVENT_TYPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/;
const MAX_INT = 2_147_483_647;

/** A policy change an admin asked for that cannot be stored; nothing was written. */
export class InvalidRetryPolicyError extends InvalidSettingError {
  override name = 'InvalidRetryPolicyError';
}

/** Fields an admin may set; undefined keeps the current value, null clears a nullable one. */
export interface RetryPolicyChanges {
  maxAttempts?: number | undefined;
  backoff?: BackoffKind | undefined;
  baseDelayMs?: number | undefined;
  maxDelayMs?: number | undefined;
  timeoutMs?: number | undefined;
  paused?: boolean | undefined;
  ordered?: boolean | undefined;
  concurrency?: number | null | undefined;
  /**
   * The delivery target; null removes it (events are then held). Given with the stored target's
   * kind, its settings are laid over the stored ones: an omitted setting (a secret the form left
   * empty) keeps its value, a null one is removed.
   */
  target?: Target | null | undefined;
  allowPrivateTarget?: boolean | undefined;
  permanentStatusCodes?: number[] | undefined;
  permanentErrorKinds?: ErrorKind[] | undefined;
}

type PolicyValues = Omit<RetryPolicy, 'eventType' | 'createdAt' | 'updatedAt' | 'updatedBy'>;

/** The policy's target, or null when it has none. */
export function targetOf(policy: Pick<RetryPolicy, 'targetKind' | 'targetSettings'>): Target | null {
  return policy.targetKind === null ? null : { kind: policy.targetKind, settings: (policy.targetSettings ?? {}) as Record<string, unknown> };
}

/**
 * Creates or changes the policy of `eventType` ('*' is the default for types without one); `kinds`
 * are the target kinds a new target may have. Throws InvalidRetryPolicyError before writing
 * anything when the resulting policy is invalid.
 */
export async function upsertRetryPolicy(
  db: Queryable, eventType: string, changes: RetryPolicyChanges, actor: string, kinds: TargetKindSpecs,
): Promise<RetryPolicy> {
  assertEventType(eventType);
  const current = await currentOrDefault(db, eventType);
  const { target, ...scalars } = changes;
  const next: PolicyValues = { ...current };
  for (const [key, value] of Object.entries(scalars)) {
    if (value !== undefined) (next as Record<string, unknown>)[key] = value;
  }
  assertPolicy(next);
  // A stored target is checked again when the SSRF switch changes under it.
  if (target !== undefined || changes.allowPrivateTarget !== undefined) {
    const merged = target === undefined ? targetOf(current) : mergeTarget(targetOf(current), target);
    const checked = merged && assertTarget(kinds, merged, next.allowPrivateTarget);
    next.targetKind = checked?.kind ?? null;
    next.targetSettings = (checked?.settings ?? null) as PolicyValues['targetSettings'];
  }
  const values = { ...next, targetSettings: next.targetSettings ?? Prisma.DbNull };
  return saveRetryPolicy(db, eventType, values, actor);
}

/** Pauses or resumes deliveries of one event type; its events stay PENDING while paused. */
export function setEventTypePaused(db: Db, eventType: string, paused: boolean, actor: string): Promise<RetryPolicy> {
  // No target changes here, so no kind is needed to check one.
  return upsertRetryPolicy(db, eventType, { paused }, actor, new Map());
}

function mergeTarget(current: Target | null, change: Target | null): Target | null {
  if (change === null) return null;
  if (typeof change.settings !== 'object' || change.settings === null || Array.isArray(change.settings)) {
    throw new InvalidRetryPolicyError('target.settings', 'INVALID_SETTING', 'target settings must be an object of the kind\'s settings');
  }
  const base = current?.kind === change.kind ? current.settings : {};
  const settings = Object.fromEntries(Object.entries({ ...base, ...change.settings }).filter(([, v]) => v !== null && v !== undefined));
  return { kind: change.kind, settings };
}

function assertTarget(kinds: TargetKindSpecs, target: Target, allowPrivateTarget: boolean): Target {
  const result = parseTarget(kinds, target, { allowPrivateTarget });
  if (!result.ok) throw new InvalidRetryPolicyError(result.problem.field, result.problem.reason, result.problem.message);
  return result.target;
}

async function currentOrDefault(db: Queryable, eventType: string): Promise<PolicyValues> {
  const rows = await findRetryPoliciesOf(db, [eventType, DEFAULT_POLICY_EVENT_TYPE]);
  const row = rows.find((r) => r.eventType === eventType) ?? rows.find((r) => r.eventType === DEFAULT_POLICY_EVENT_TYPE);
  if (!row) throw new Error('the default retry policy row is missing');
  const { eventType: _t, createdAt: _c, updatedAt: _u, updatedBy: _b, ...values } = row;
  return values;
}

function assertEventType(eventType: string) {
  if (eventType !== DEFAULT_POLICY_EVENT_TYPE && !EVENT_TYPE_PATTERN.test(eventType)) {
    throw new InvalidRetryPolicyError('eventType', 'INVALID_EVENT_TYPE',
      'eventType must be "*" or 1–200 characters of letters, digits and . _ : / - starting with a letter or digit');
  }
}

function assertPolicy(p: PolicyValues) {
  range('maxAttempts', p.maxAttempts, 1, 1000);
  range('baseDelayMs', p.baseDelayMs, 0, 604_800_000);
  range('maxDelayMs', p.maxDelayMs, p.baseDelayMs, MAX_INT);
  range('timeoutMs', p.timeoutMs, 100, 300_000);
  if (p.concurrency !== null) range('concurrency', p.concurrency, 1, 10_000);
  if (p.permanentStatusCodes.length > 100 || p.permanentStatusCodes.some((c) => !Number.isInteger(c) || c < 400 || c > 599)) {
    throw new InvalidRetryPolicyError('permanentStatusCodes', 'OUT_OF_RANGE', 'permanentStatusCodes must be at most 100 codes between 400 and 599');
  }
}

function range(field: string, value: number, min: number, max: number) {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidRetryPolicyError(field, 'OUT_OF_RANGE', `${field} must be an integer between ${min} and ${max}`);
  }
}
