// Alert rules: every role reads them (the console shows on-call what is alerting and where), but
// only admins see the whole target URL (a Slack webhook's path is its secret; others get its host)
// and only admins create, update, delete or send a test alert. Refusals are BAD_USER_INPUT naming
// the field and the reason, as for retry policies; an unknown id is NOT_FOUND. Nothing is written
// when a change is refused.
import { createGraphQLError } from 'graphql-yoga';
import {
  AlertRuleNotFoundError, createAlertRule, deleteAlertRule, InvalidAlertRuleError, sendTestAlert, updateAlertRule, type AlertRuleChanges,
} from '../../domain/alertRules.ts';
import { AlertFormat, AlertTrigger } from '../../generated/prisma/enums.ts';
import { readAlertOrThrow, readAlertRules } from '../../reads/alerts.ts';
import { builder } from './builder.ts';
import { badUserInput } from './errors.ts';
import { parseId } from './ids.ts';

export const AlertTriggerEnum = builder.enumType(AlertTrigger, {
  name: 'AlertTrigger',
  description: 'NEW_GROUP and REGRESSION: an error group appeared or a resolved one failed again (subject: the group). ' +
    'EXHAUSTED_RATE: events that became EXHAUSTED in the last minute above `threshold`. OLDEST_PENDING_AGE: seconds since the oldest ' +
    'due PENDING event became due above `threshold`. BACKLOG: PENDING events above `threshold`. REDRIVE_PAUSED: a redrive paused by ' +
    'its failure-rate guard (subject: the redrive). Metric triggers have the subject `global`.',
});

const AlertFormatEnum = builder.enumType(AlertFormat, {
  name: 'AlertFormat',
  description: 'STANDARD: the alert as JSON. SLACK: a Slack-compatible `{ "text": … }` body. Both are signed (Standard Webhooks).',
});

builder.prismaObject('AlertRule', {
  description: 'Where and when alerts go. At most one alert per rule and subject per `windowSeconds`, and at most `maxAlertsPerWindow` per `capWindowSeconds` (the rest in one digest). Any role reads it; `targetUrl` is for admins only (a target URL can be a secret, as Slack\'s are).',
  fields: (t) => ({
    id: t.id({ resolve: (r) => r.id.toString() }),
    name: t.exposeString('name'),
    trigger: t.expose('trigger', { type: AlertTriggerEnum }),
    threshold: t.exposeInt('threshold', { nullable: true, description: 'Metric triggers only: per minute, seconds or events.' }),
    windowSeconds: t.exposeInt('windowSeconds', { description: 'Throttle: at most one alert per subject within this many seconds.' }),
    maxAlertsPerWindow: t.exposeInt('maxAlertsPerWindow', {
      description: 'Volume cap: at most this many alerts (any subjects) per capWindowSeconds. Past it, alerts are recorded SUPPRESSED ' +
        'and folded into one digest alert (subject `digest`), sent when the window closes.',
    }),
    capWindowSeconds: t.exposeInt('capWindowSeconds', { description: 'The volume cap\'s window, opened by the first alert after the last one closed.' }),
    enabled: t.exposeBoolean('enabled'),
    targetUrl: t.exposeString('targetUrl', {
      authScopes: { admin: true },
      description: 'Webhook URL, checked against private addresses at save and at every delivery. Admins only: other roles read targetHost.',
    }),
    targetHost: t.string({
      nullable: true,
      description: 'The target\'s host and port (e.g. "hooks.slack.com"), for every role; null if the stored URL does not parse.',
      resolve: (r) => URL.parse(r.targetUrl)?.host ?? null,
    }),
    format: t.expose('format', { type: AlertFormatEnum }),
    allowPrivateTarget: t.exposeBoolean('allowPrivateTarget'),
    hasSigningSecret: t.boolean({ description: 'Always true: every alert is signed; the secret itself is never returned.', resolve: () => true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    updatedBy: t.exposeString('updatedBy', { nullable: true }),
  }),
});

const CreateAlertRuleInput = builder.inputType('CreateAlertRuleInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    trigger: t.field({ type: AlertTriggerEnum, required: true }),
    threshold: t.int({ description: 'Required for EXHAUSTED_RATE, OLDEST_PENDING_AGE and BACKLOG; not allowed for the others.' }),
    windowSeconds: t.int({ description: 'Default 900.' }),
    maxAlertsPerWindow: t.int({ description: '1–100000. Default 10.' }),
    capWindowSeconds: t.int({ description: '1–2592000. Default 300.' }),
    enabled: t.boolean({ description: 'Default true.' }),
    targetUrl: t.string({ required: true }),
    format: t.field({ type: AlertFormatEnum, description: 'Default STANDARD.' }),
    signingSecret: t.string({ required: true, description: '16–500 characters; "whsec_…" is read as base64 (Standard Webhooks).' }),
    allowPrivateTarget: t.boolean({ description: 'Allow a private, loopback or link-local target. Default false.' }),
  }),
});

const UpdateAlertRuleInput = builder.inputType('UpdateAlertRuleInput', {
  description: 'Omitted fields keep their value; threshold null clears it (a rule moved to an event trigger drops it).',
  fields: (t) => ({
    id: t.id({ required: true }),
    name: t.string(),
    trigger: t.field({ type: AlertTriggerEnum }),
    threshold: t.int(),
    windowSeconds: t.int(),
    maxAlertsPerWindow: t.int(),
    capWindowSeconds: t.int(),
    enabled: t.boolean(),
    targetUrl: t.string(),
    format: t.field({ type: AlertFormatEnum }),
    signingSecret: t.string(),
    allowPrivateTarget: t.boolean(),
  }),
});

async function coded<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof InvalidAlertRuleError) throw badUserInput(error.message, { field: error.field, reason: error.reason });
    if (error instanceof AlertRuleNotFoundError) {
      throw createGraphQLError(error.message, { extensions: { code: 'NOT_FOUND', id: error.id.toString() } });
    }
    throw error;
  }
}

function toChanges(input: Record<string, unknown>): AlertRuleChanges {
  const changes: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (key === 'id' || value === undefined) continue;
    if (value === null && key !== 'threshold') throw badUserInput(`${key} cannot be null`, { field: key, reason: 'NULL_NOT_ALLOWED' });
    changes[key] = value;
  }
  return changes as AlertRuleChanges;
}

builder.queryFields((t) => ({
  alertRules: t.prismaField({
    type: ['AlertRule'],
    description: 'Every alert rule, oldest first. Any role; only admins may select targetUrl.',
    resolve: (query, _root, _args, ctx) => readAlertRules(ctx.db, query),
  }),
}));

builder.mutationFields((t) => ({
  createAlertRule: t.prismaField({
    type: 'AlertRule',
    authScopes: { admin: true },
    args: { input: t.arg({ type: CreateAlertRuleInput, required: true }) },
    resolve: (_query, _root, { input }, ctx) => coded(() => {
      const { threshold, ...rest } = toChanges(input);
      return createAlertRule(ctx.db, { ...rest, threshold: threshold ?? null } as Parameters<typeof createAlertRule>[1], ctx.principal!.name);
    }),
  }),
  updateAlertRule: t.prismaField({
    type: 'AlertRule',
    authScopes: { admin: true },
    args: { input: t.arg({ type: UpdateAlertRuleInput, required: true }) },
    resolve: (_query, _root, { input }, ctx) =>
      coded(() => updateAlertRule(ctx.db, parseId(input.id), toChanges(input), ctx.principal!.name)),
  }),
  deleteAlertRule: t.prismaField({
    type: 'AlertRule',
    description: 'Its alerts stay in the history; those not yet delivered end FAILED.',
    authScopes: { admin: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_query, _root, args, ctx) => coded(() => deleteAlertRule(ctx.db, parseId(args.id))),
  }),
  sendTestAlert: t.prismaField({
    type: 'Alert',
    description: 'Sends a test alert through the rule\'s channel now (subject `test`, details `{ "test": true }`), enabled or not and ' +
      'outside its throttle, to check that the target answers; follow its delivery in `alerts`.',
    authScopes: { admin: true },
    args: { ruleId: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx) => {
      const id = await coded(() => sendTestAlert(ctx.db, parseId(args.ruleId, 'ruleId'), ctx.principal!.name));
      return readAlertOrThrow(ctx.db, id, query);
    },
  }),
}));
