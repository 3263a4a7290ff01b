// Alert history: every alert raised, newest first, with its delivery state.
import DataLoader from 'dataloader';
import type { ErrorGroup } from '../../generated/prisma/client.ts';
import { AlertDeliveryStatus } from '../../generated/prisma/enums.ts';
import { readAlertPage } from '../../reads/alerts.ts';
import { readErrorGroups } from '../../reads/errorGroups.ts';
import { AlertTriggerEnum } from './alertRule.ts';
import { builder, type GraphQLContext } from './builder.ts';
import { ErrorGroupRef } from './errorGroup.ts';
import { parseId } from './ids.ts';

// A page of alerts asks for each one's group in one pass of the executor: one read per request.
const groupLoaders = new WeakMap<GraphQLContext, DataLoader<bigint, ErrorGroup | null>>();
function errorGroupOf(ctx: GraphQLContext, id: bigint): Promise<ErrorGroup | null> {
  let loader = groupLoaders.get(ctx);
  if (!loader) {
    loader = new DataLoader<bigint, ErrorGroup | null>(async (ids) => {
      const byId = new Map((await readErrorGroups(ctx.db, [...new Set(ids)])).map((g) => [g.id, g]));
      return ids.map((id) => byId.get(id) ?? null);
    }, { cache: false });
    groupLoaders.set(ctx, loader);
  }
  return loader.load(id);
}

/** The group id of a `group:<id>` subject, else null. */
function groupIdOf(subject: string): bigint | null {
  const match = /^group:([1-9][0-9]{0,18})$/.exec(subject);
  return match ? BigInt(match[1]!) : null;
}

const AlertDeliveryStatusEnum = builder.enumType(AlertDeliveryStatus, {
  name: 'AlertDeliveryStatus',
  description: 'PENDING (waiting for its first or next attempt) → DELIVERING (leased) → DELIVERED | back to PENDING with backoff | ' +
    'FAILED (a permanent answer, out of attempts, or its rule was deleted). SUPPRESSED: past its rule\'s volume cap, never sent; ' +
    'counted in the digest alert `digestId`.',
});

builder.prismaObject('Alert', {
  description: 'An alert a rule raised, and how its delivery went.',
  fields: (t) => ({
    id: t.id({ resolve: (a) => a.id.toString() }),
    rule: t.relation('rule', { nullable: true, description: 'Null once the rule was deleted (ruleName still names it).' }),
    ruleName: t.exposeString('ruleName'),
    trigger: t.expose('trigger', { type: AlertTriggerEnum }),
    subject: t.exposeString('subject', {
      description: '`group:<id>`, `redrive:<id>`, `global` (metric triggers), `test` (sendTestAlert) or `digest` (the alerts a volume cap suppressed).',
    }),
    errorGroup: t.field({
      type: ErrorGroupRef,
      nullable: true,
      description: 'The error group a NEW_GROUP or REGRESSION alert is about (subject `group:<id>`): its event type, error kind and signature, as it is now. Null for other subjects.',
      resolve: (a, _args, ctx) => {
        const id = groupIdOf(a.subject);
        return id === null ? null : errorGroupOf(ctx, id);
      },
    }),
    summary: t.exposeString('summary'),
    details: t.expose('details', { type: 'JSON' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    deliveryStatus: t.expose('deliveryStatus', { type: AlertDeliveryStatusEnum }),
    attempts: t.exposeInt('attempts'),
    nextAttemptAt: t.field({ type: 'DateTime', nullable: true, description: 'When the next attempt is due; null unless PENDING.', resolve: (a) => (a.deliveryStatus === 'PENDING' ? a.nextAttemptAt : null) }),
    lastError: t.exposeString('lastError', { nullable: true }),
    lastStatusCode: t.exposeInt('lastStatusCode', { nullable: true }),
    deliveredAt: t.expose('deliveredAt', { type: 'DateTime', nullable: true }),
    digestId: t.id({ nullable: true, description: 'SUPPRESSED alerts: the digest alert that counts them.', resolve: (a) => a.digestId?.toString() ?? null }),
  }),
});

const AlertFilter = builder.inputType('AlertFilter', {
  description: 'Fields combine with AND.',
  fields: (t) => ({
    ruleId: t.id(),
    triggers: t.field({ type: [AlertTriggerEnum] }),
    subject: t.string({ description: 'Exact, e.g. "group:17".' }),
    deliveryStatuses: t.field({ type: [AlertDeliveryStatusEnum] }),
  }),
});

builder.queryFields((t) => ({
  alerts: t.prismaConnection({
    type: 'Alert',
    cursor: 'id',
    defaultSize: 50,
    maxSize: 500,
    description: 'Alert history, newest first.',
    args: { filter: t.arg({ type: AlertFilter }) },
    resolve: (query, _root, { filter }, ctx) => {
      return readAlertPage(ctx.db, query, {
        ...(filter?.ruleId != null && { ruleId: parseId(filter.ruleId, 'filter.ruleId') }),
        ...(filter?.triggers && { triggers: filter.triggers }),
        ...(filter?.subject != null && { subject: filter.subject }),
        ...(filter?.deliveryStatuses && { deliveryStatuses: filter.deliveryStatuses }),
      });
    },
  }),
}));
