// Retry policies as admins change them: validation of the whole resulting policy, then one
// write. A new type's policy starts as a copy of the default ('*') row.
import type { Db } from '../db/createDb.ts';
import type { BackoffKind, ErrorKind, RetryPolicy } from '../generated/prisma/client.ts';
import { InvalidSettingError } from './errors.ts';
import { targetUrlProblem } from './targetAddress.ts';

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
  targetUrl?: string | null | undefined;
  allowPrivateTarget?: boolean | undefined;
  signingSecret?: string | null | undefined;
  permanentStatusCodes?: number[] | undefined;
  permanentErrorKinds?: ErrorKind[] | undefined;
}

type PolicyValues = Omit<RetryPolicy, 'eventType' | 'createdAt' | 'updatedAt' | 'updatedBy'>;

/**
 * Creates or changes the policy of `eventType` ('*' is the default for types without one).
 * Throws InvalidRetryPolicyError before writing anything when the resulting policy is invalid.
 */
export async function upsertRetryPolicy(db: Db, eventType: string, changes: RetryPolicyChanges, actor: string): Promise<RetryPolicy> {
  assertEventType(eventType);
  const current = await currentOrDefault(db, eventType);
  const next: PolicyValues = { ...current };
  for (const [key, value] of Object.entries(changes)) {
    if (value !== undefined) (next as Record<string, unknown>)[key] = value;
  }
  assertPolicy(next);
  return db.retryPolicy.upsert({
    where: { eventType },
    create: { ...next, eventType, updatedBy: actor },
    update: { ...next, updatedBy: actor },
  });
}

/** Pauses or resumes deliveries of one event type; its events stay PENDING while paused. */
export function setEventTypePaused(db: Db, eventType: string, paused: boolean, actor: string): Promise<RetryPolicy> {
  return upsertRetryPolicy(db, eventType, { paused }, actor);
}

async function currentOrDefault(db: Db, eventType: string): Promise<PolicyValues> {
  const rows = await db.retryPolicy.findMany({ where: { eventType: { in: [eventType, DEFAULT_POLICY_EVENT_TYPE] } } });
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
  if (p.signingSecret !== null && (p.signingSecret.length < 16 || p.signingSecret.length > 500)) {
    throw new InvalidRetryPolicyError('signingSecret', 'INVALID_SECRET', 'signingSecret must be 16–500 characters');
  }
  if (p.targetUrl !== null) assertTarget(p.targetUrl, p.allowPrivateTarget);
}

function assertTarget(targetUrl: string, allowPrivateTarget: boolean) {
  const problem = targetUrlProblem(targetUrl, allowPrivateTarget);
  if (problem) throw new InvalidRetryPolicyError('targetUrl', problem.reason, problem.message);
}

function range(field: string, value: number, min: number, max: number) {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidRetryPolicyError(field, 'OUT_OF_RANGE', `${field} must be an integer between ${min} and ${max}`);
  }
}
