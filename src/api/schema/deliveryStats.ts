// Delivery charts per event type or target (issue 35), from the delivery rollups: reads/deliveryStats.ts.
import { readDeliveryStats, type DeliverySeries, type DeliveryStats } from '../../reads/deliveryStats.ts';
import { builder } from './builder.ts';

const DeliveryWindowEnum = builder.enumType('DeliveryWindow', {
  description: 'How far back delivery charts reach.',
  values: {
    HOUR: { description: 'The last 60 minutes: 60 one-minute steps, the last one the current minute.' },
    DAY: { description: 'The last 24 hours: 96 steps of 15 minutes, the last one the current quarter hour.' },
  },
});

const DeliveryGroupingEnum = builder.enumType('DeliveryGrouping', {
  values: {
    EVENT_TYPE: { description: 'One series per event type.' },
    TARGET: { description: 'One series per delivery target (its description: a URL’s host, a queue, a subject); "" for attempts that recorded none (in-process handlers).' },
  },
});

const DeliverySeriesRef = builder.objectRef<DeliverySeries>('DeliverySeries').implement({
  description: 'Delivery attempts of one event type or target over the window. Lost leases are not deliveries and are left out.',
  fields: (t) => ({
    key: t.exposeString('key', { description: 'The event type or the target.' }),
    deliveries: t.exposeInt('deliveries', { description: 'Attempts over the window, whatever their outcome.' }),
    succeeded: t.exposeInt('succeeded'),
    successRate: t.float({ nullable: true, description: 'succeeded / deliveries; null without deliveries.', resolve: (s) => (s.deliveries ? s.succeeded / s.deliveries : null) }),
    perMinute: t.floatList({ description: 'Deliveries per minute at each step of `DeliveryStats.stepStarts` (a step’s count over its minutes).', resolve: (s) => s.perMinute }),
    succeededPerMinute: t.floatList({ description: 'Successful deliveries per minute at each step.', resolve: (s) => s.succeededPerMinute }),
    p50Ms: t.float({
      nullable: true,
      description: 'Median duration of the attempts (the target’s response time), from fixed log-spaced buckets: within 9.5% of the exact nearest-rank value, exact below 8 ms.',
      resolve: (s) => s.p50Ms,
    }),
    p95Ms: t.float({ nullable: true, description: 'The 95th percentile of the attempts’ durations, with the same bound as p50Ms.', resolve: (s) => s.p95Ms }),
  }),
});

const DeliveryStatsRef = builder.objectRef<DeliveryStats>('DeliveryStats').implement({
  description: 'Deliveries per minute, success rate and response-time percentiles, read from per-minute rollups of the delivery attempts (never a scan).',
  fields: (t) => ({
    window: t.field({ type: DeliveryWindowEnum, resolve: (s) => s.window }),
    groupBy: t.field({ type: DeliveryGroupingEnum, resolve: (s) => s.groupBy }),
    stepMinutes: t.exposeInt('stepMinutes', { description: 'How wide each step is: 1 for HOUR, 15 for DAY.' }),
    stepStarts: t.field({ type: ['DateTime'], description: 'Each step’s start, oldest first.', resolve: (s) => s.stepStarts }),
    series: t.field({ type: [DeliverySeriesRef], description: 'Most deliveries first (ties by key); keys without deliveries in the window are left out.', resolve: (s) => s.series }),
  }),
});

builder.queryFields((t) => ({
  deliveryStats: t.field({
    type: DeliveryStatsRef,
    description: 'Delivery charts per event type or per target over the last hour or day.',
    args: {
      window: t.arg({ type: DeliveryWindowEnum, required: true, defaultValue: 'HOUR' }),
      groupBy: t.arg({ type: DeliveryGroupingEnum, required: true, defaultValue: 'EVENT_TYPE' }),
    },
    resolve: (_root, args, ctx) => readDeliveryStats(ctx.db, args.window, args.groupBy, new Date()),
  }),
}));
