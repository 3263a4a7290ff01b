// Alert history: every alert raised, newest first, with its delivery state.
import { AlertDeliveryStatus } from '../../generated/prisma/enums.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import { AlertTriggerEnum } from './alertRule.ts';
import { builder } from './builder.ts';
import { parseId } from './ids.ts';

const AlertDeliveryStatusEnum = builder.enumType(AlertDeliveryStatus, {
  name: 'AlertDeliveryStatus',
  description: 'PENDING (waiting for its first or next attempt) → DELIVERING (leased) → DELIVERED | back to PENDING with backoff | ' +
    'FAILED (a permanent answer, out of attempts, or its rule was deleted).',
});

builder.prismaObject('Alert', {
  description: 'An alert a rule raised, and how its delivery went.',
  fields: (t) => ({
    id: t.id({ resolve: (a) => a.id.toString() }),
    rule: t.relation('rule', { nullable: true, description: 'Null once the rule was deleted (ruleName still names it).' }),
    ruleName: t.exposeString('ruleName'),
    trigger: t.expose('trigger', { type: AlertTriggerEnum }),
    subject: t.exposeString('subject', { description: '`group:<id>`, `redrive:<id>`, `global` (metric triggers) or `test` (sendTestAlert).' }),
    summary: t.exposeString('summary'),
    details: t.expose('details', { type: 'JSON' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    deliveryStatus: t.expose('deliveryStatus', { type: AlertDeliveryStatusEnum }),
    attempts: t.exposeInt('attempts'),
    nextAttemptAt: t.field({ type: 'DateTime', nullable: true, description: 'When the next attempt is due; null unless PENDING.', resolve: (a) => (a.deliveryStatus === 'PENDING' ? a.nextAttemptAt : null) }),
    lastError: t.exposeString('lastError', { nullable: true }),
    lastStatusCode: t.exposeInt('lastStatusCode', { nullable: true }),
    deliveredAt: t.expose('deliveredAt', { type: 'DateTime', nullable: true }),
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
      const where: Prisma.AlertWhereInput = {
        ...(filter?.ruleId != null && { ruleId: parseId(filter.ruleId, 'filter.ruleId') }),
        ...(filter?.triggers && { trigger: { in: filter.triggers } }),
        ...(filter?.subject != null && { subject: filter.subject }),
        ...(filter?.deliveryStatuses && { deliveryStatus: { in: filter.deliveryStatuses } }),
      };
      return ctx.db.alert.findMany({ ...query, where, orderBy: { id: 'desc' } });
    },
  }),
}));
