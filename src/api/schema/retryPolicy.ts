import { BackoffKind } from '../../generated/prisma/enums.ts';
import {
  InvalidRetryPolicyError, setEventTypePaused, targetOf, type RetryPolicyChanges,
} from '../../domain/retryPolicies.ts';
import { readRetryPolicies } from '../../reads/retryPolicies.ts';
import { describeTarget, type Target, type TargetField, type TargetKindSpec } from '../../domain/retryTarget.ts';
import type { RetryPolicy } from '../../generated/prisma/client.ts';
import { TARGET_KINDS } from '../../workers/targets/registry.ts';
import { builder } from './builder.ts';
import { ErrorKindEnum } from './enums.ts';
import { badUserInput } from './errors.ts';
import { HeldReleaseModeEnum, type SavedRetryPolicy } from './policyRelease.ts';
import { saveRetryPolicy } from '../../domain/policyRelease.ts';
import { DEFAULT_WRITE_CONFIG } from '../../domain/writeConfig.ts';

const BackoffKindEnum = builder.enumType(BackoffKind, {
  name: 'BackoffKind',
  description: 'EXPONENTIAL: random in [0, min(maxDelayMs, baseDelayMs·2^(n−1))] (full jitter); LINEAR: baseDelayMs·n; FIXED: baseDelayMs.',
});

const RetryTargetRef = builder.objectRef<Target>('RetryTarget').implement({
  description: 'Where a type\'s events are delivered: a kind (see `retryTargetKinds`) and its settings.',
  fields: (t) => ({
    kind: t.exposeString('kind'),
    description: t.string({
      nullable: true,
      description: 'One line for display: the kind and host, never a secret or a URL\'s path; null when this server does not know the kind.',
      resolve: (target) => describeTarget(TARGET_KINDS, target),
    }),
    settings: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The settings without their secrets (see `secretsSet`); null when this server does not know the kind.',
      resolve: (target) => {
        const spec = TARGET_KINDS.get(target.kind);
        const parsed = spec?.settings.safeParse(target.settings);
        return spec && parsed?.success ? spec.publicSettings(parsed.data) : null;
      },
    }),
    secretsSet: t.stringList({
      description: 'Names of the secret settings that have a value; the values are never returned.',
      resolve: (target) => secretFields(TARGET_KINDS.get(target.kind)).filter((name) => target.settings[name] != null),
    }),
  }),
});

const RetryTargetFieldRef = builder.objectRef<TargetField>('RetryTargetField').implement({
  description: 'One setting of a target kind, as a form shows it.',
  fields: (t) => ({
    name: t.exposeString('name'),
    label: t.exposeString('label'),
    isSecret: t.boolean({ description: 'Write-only: an omitted value keeps the stored one.', resolve: (f) => f.isSecret ?? false }),
    isRequired: t.boolean({ resolve: (f) => f.isRequired ?? false }),
    placeholder: t.string({ nullable: true, resolve: (f) => f.placeholder ?? null }),
  }),
});

const RetryTargetKindRef = builder.objectRef<TargetKindSpec>('RetryTargetKind').implement({
  description: 'A kind of delivery target this server can deliver to.',
  fields: (t) => ({
    kind: t.exposeString('kind'),
    label: t.exposeString('label'),
    fields: t.field({ type: [RetryTargetFieldRef], resolve: (k) => [...k.fields] }),
  }),
});

const webhookSetting = (p: RetryPolicy, name: string) =>
  p.targetKind === 'webhook' ? ((p.targetSettings as Record<string, unknown> | null)?.[name] ?? null) : null;

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
    target: t.field({
      type: RetryTargetRef,
      nullable: true,
      description: 'The delivery target; null holds events PENDING unless an in-process handler exists.',
      resolve: (p) => targetOf(p),
    }),
    targetUrl: t.string({
      nullable: true,
      deprecationReason: 'Use `target` (kind "webhook", settings.url).',
      description: 'The webhook URL when the target is a webhook, else null.',
      resolve: (p) => webhookSetting(p, 'url') as string | null,
    }),
    allowPrivateTarget: t.exposeBoolean('allowPrivateTarget', { description: 'Allows targets on private, loopback or link-local addresses.' }),
    hasSigningSecret: t.boolean({
      deprecationReason: 'Use `target.secretsSet`.',
      description: 'Whether webhook deliveries are signed; the secret itself is never returned.',
      resolve: (p) => webhookSetting(p, 'secret') !== null,
    }),
    permanentStatusCodes: t.exposeIntList('permanentStatusCodes'),
    permanentErrorKinds: t.field({ type: [ErrorKindEnum], resolve: (p) => p.permanentErrorKinds }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    updatedBy: t.exposeString('updatedBy', { nullable: true }),
  }),
});

const RetryTargetInput = builder.inputType('RetryTargetInput', {
  description: 'A delivery target: a kind from `retryTargetKinds` and its settings. With the stored kind, settings are laid over the stored ones (an omitted secret keeps its value; null removes a setting).',
  fields: (t) => ({
    kind: t.string({ required: true }),
    settings: t.field({ type: 'JSON', required: true, description: 'e.g. {"url": "https://…", "secret": "whsec_…"} for "webhook".' }),
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
    target: t.field({ type: RetryTargetInput, description: 'null removes the target (events are then held).' }),
    targetUrl: t.string({ deprecationReason: 'Use `target: { kind: "webhook", settings: { url } }`.' }),
    allowPrivateTarget: t.boolean(),
    signingSecret: t.string({
      deprecationReason: 'Use `target: { kind: "webhook", settings: { secret } }`.',
      description: 'HMAC key; "whsec_…" is read as base64 (Standard Webhooks).',
    }),
    permanentStatusCodes: t.intList(),
    permanentErrorKinds: t.field({ type: [ErrorKindEnum] }),
    release: t.field({
      type: HeldReleaseModeEnum,
      description: 'How to release the held events this save lets go (see `heldEventCounts`); omitted: RAMPED above `redriveSettings.threshold` of them, else AT_ONCE.',
    }),
  }),
});

const NULLABLE = new Set(['concurrency', 'target', 'targetUrl', 'signingSecret']);
const LEGACY_WEBHOOK_FIELDS = { targetUrl: 'url', signingSecret: 'secret' } as const;
type LegacyField = keyof typeof LEGACY_WEBHOOK_FIELDS;

function toChanges(input: Record<string, unknown>): RetryPolicyChanges {
  const changes: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (key === 'eventType' || key === 'release' || value === undefined) continue;
    if (value === null && !NULLABLE.has(key)) throw badUserInput(`${key} cannot be null`, { field: key, reason: 'NULL_NOT_ALLOWED' });
    if (key in LEGACY_WEBHOOK_FIELDS) continue;
    changes[key] = value;
  }
  const legacy = legacyWebhookTarget(input);
  if (legacy !== undefined) {
    if (input.target !== undefined) {
      throw badUserInput('give either target or targetUrl/signingSecret, not both', { field: 'target', reason: 'CONFLICTING_FIELDS' });
    }
    changes.target = legacy;
  }
  return changes as RetryPolicyChanges;
}

/** The webhook target the deprecated targetUrl/signingSecret fields ask for; undefined when neither is given. */
function legacyWebhookTarget(input: Record<string, unknown>): Target | null | undefined {
  const given = (Object.keys(LEGACY_WEBHOOK_FIELDS) as LegacyField[]).filter((k) => input[k] !== undefined);
  if (given.length === 0) return undefined;
  if (input.targetUrl === null) return null;
  return { kind: 'webhook', settings: Object.fromEntries(given.map((k) => [LEGACY_WEBHOOK_FIELDS[k], input[k]])) };
}

/** A problem with a webhook setting given through a deprecated field is reported under that field. */
function inputField(field: string, input: Record<string, unknown>): string {
  if (legacyWebhookTarget(input) === undefined) return field;
  const legacy = (Object.keys(LEGACY_WEBHOOK_FIELDS) as LegacyField[]).find((k) => field === `target.settings.${LEGACY_WEBHOOK_FIELDS[k]}`);
  return legacy ?? field;
}

function secretFields(spec: TargetKindSpec | undefined): string[] {
  return spec?.fields.filter((f) => f.isSecret).map((f) => f.name) ?? [];
}

async function coded<T>(write: () => Promise<T>, input: Record<string, unknown> = {}): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof InvalidRetryPolicyError) {
      throw badUserInput(error.message, { field: inputField(error.field, input), reason: error.reason });
    }
    throw error;
  }
}

builder.queryFields((t) => ({
  retryTargetKinds: t.field({
    type: [RetryTargetKindRef],
    description: 'The kinds of delivery target this server delivers to, with the settings each takes.',
    authScopes: { admin: true },
    resolve: () => [...TARGET_KINDS.values()],
  }),
  retryPolicies: t.prismaField({
    type: ['RetryPolicy'],
    description: 'Every retry policy, the default "*" first.',
    authScopes: { admin: true },
    resolve: (query, _root, _args, ctx) => readRetryPolicies(ctx.db, query),
  }),
}));

builder.mutationFields((t) => ({
  upsertRetryPolicy: t.field({
    type: RetryPolicyRef,
    authScopes: { admin: true },
    args: { input: t.arg({ type: UpsertRetryPolicyInput, required: true }) },
    description: 'Creates or changes a policy. Held events the save lets go are released as `input.release` says; `heldRelease` on the answer says how many, and which redrive.',
    resolve: async (_root, { input }, ctx): Promise<SavedRetryPolicy> => {
      const saved = await coded(() => saveRetryPolicy(ctx.db, {
        eventType: input.eventType, changes: toChanges(input), actor: ctx.principal!.name, kinds: TARGET_KINDS,
        config: ctx.writeConfig ?? DEFAULT_WRITE_CONFIG, release: input.release ?? null, inProcessEventTypes: ctx.inProcessEventTypes ?? [],
      }), input);
      return Object.assign(saved.policy, { heldRelease: saved.release });
    },
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
