import { BackoffKind } from '../../generated/prisma/enums.ts';
import {
  InvalidRetryPolicyError, setEventTypePaused, upsertRetryPolicy, type RetryPolicyChanges,
} from '../../domain/retryPolicies.ts';
import { builder } from './builder.ts';
import { ErrorKindEnum } from './enums.ts';
import { badUserInput } from './errors.ts';

const BackoffKindEnum = builder.enumType(BackoffKind, {
  name: 'BackoffKind',
  description: 'EXPONENTIAL: random in [0, min(maxDelayMs, baseDelayMs·2^(n−1))] (full jitter); LINEAR: baseDelayMs·n; FIXED: baseDelayMs.',
});

const RetryPolicyRef = builder.prismaObject('RetryPolicy', {
  description: 'How events of one type are retried. The policy "*" covers every type without its own.',
  fields: (t) => ({
    eventType: t.exposeString('eventType'),
    maxAttempts: t.exposeInt('maxAttempts'),
    backoff: t.expose('backoff', { type: BackoffKindEnum }),
    baseDelayMs: t.exposeInt('baseDelayMs'),
    maxDelayMs: t.exposeInt('maxDelayMs'),
    timeoutMs: t.exposeInt('timeoutMs', { description: 'Per-attempt delivery timeout.' }),
    paused: t.exposeBoolean('paused', { description: 'Paused types are not delivered; their events stay PENDING.' }),
    ordered: t.exposeBoolean('ordered', { description: 'Only the oldest unfinished event of each ordering key is delivered.' }),
    concurrency: t.exposeInt('concurrency', { nullable: true, description: 'Deliveries in flight across all processes; null is unlimited.' }),
    targetUrl: t.exposeString('targetUrl', { nullable: true, description: 'Webhook URL; null holds events PENDING unless an in-process handler exists.' }),
    allowPrivateTarget: t.exposeBoolean('allowPrivateTarget'),
    hasSigningSecret: t.boolean({ description: 'Whether deliveries are signed; the secret itself is never returned.', resolve: (p) => p.signingSecret !== null }),
    permanentStatusCodes: t.exposeIntList('permanentStatusCodes'),
    permanentErrorKinds: t.field({ type: [ErrorKindEnum], resolve: (p) => p.permanentErrorKinds }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    updatedBy: t.exposeString('updatedBy', { nullable: true }),
  }),
});

const UpsertRetryPolicyInput = builder.inputType('UpsertRetryPolicyInput', {
  description: 'Omitted fields keep their value (a new type starts from the "*" policy); null clears a nullable field.',
  fields: (t) => ({
    eventType: t.string({ required: true }),
    maxAttempts: t.int(),
    backoff: t.field({ type: BackoffKindEnum }),
    baseDelayMs: t.int(),
    maxDelayMs: t.int(),
    timeoutMs: t.int(),
    paused: t.boolean(),
    ordered: t.boolean(),
    concurrency: t.int(),
    targetUrl: t.string(),
    allowPrivateTarget: t.boolean(),
    signingSecret: t.string({ description: 'HMAC key; "whsec_…" is read as base64 (Standard Webhooks).' }),
    permanentStatusCodes: t.intList(),
    permanentErrorKinds: t.field({ type: [ErrorKindEnum] }),
  }),
});

const NULLABLE = new Set(['concurrency', 'targetUrl', 'signingSecret']);

function toChanges(input: Record<string, unknown>): RetryPolicyChanges {
  const changes: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (key === 'eventType' || value === undefined) continue;
    if (value === null && !NULLABLE.has(key)) throw badUserInput(`${key} cannot be null`, { field: key, reason: 'NULL_NOT_ALLOWED' });
    changes[key] = value;
  }
  return changes as RetryPolicyChanges;
}

async function coded<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof InvalidRetryPolicyError) throw badUserInput(error.message, { field: error.field, reason: error.reason });
    throw error;
  }
}

builder.queryFields((t) => ({
  retryPolicies: t.prismaField({
    type: ['RetryPolicy'],
    description: 'Every retry policy, the default "*" first.',
    authScopes: { admin: true },
    resolve: (query, _root, _args, ctx) => ctx.db.retryPolicy.findMany({ ...query, orderBy: { eventType: 'asc' } }),
  }),
}));

builder.mutationFields((t) => ({
  upsertRetryPolicy: t.field({
    type: RetryPolicyRef,
    authScopes: { admin: true },
    args: { input: t.arg({ type: UpsertRetryPolicyInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      coded(() => upsertRetryPolicy(ctx.db, input.eventType, toChanges(input), ctx.principal!.name)),
  }),
  pauseEventType: t.field({
    type: RetryPolicyRef,
    description: 'Stops deliveries of a type; its events stay PENDING until resumed.',
    authScopes: { admin: true },
    args: { eventType: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => coded(() => setEventTypePaused(ctx.db, args.eventType, true, ctx.principal!.name)),
  }),
  resumeEventType: t.field({
    type: RetryPolicyRef,
    authScopes: { admin: true },
    args: { eventType: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => coded(() => setEventTypePaused(ctx.db, args.eventType, false, ctx.principal!.name)),
  }),
}));
