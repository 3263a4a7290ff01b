import { Stats, BUCKET_MS, type BlockedKeyRow, type TimeBucketRow, type TopErrorRow } from '../../reads/stats.ts';
import { builder } from './builder.ts';
import { DeadLetterFilterInput, parseDeadLetterFilter } from './deadLetterFilter.ts';
import { badUserInput } from './errors.ts';

const MAX_BUCKETS = 2000;
const MAX_LIMIT = 500;

const KeyCountRef = builder.objectRef<{ key: string; count: number }>('KeyCount').implement({
  fields: (t) => ({ key: t.exposeString('key'), count: t.exposeInt('count') }),
});

const ErrorSignatureStatRef = builder.objectRef<TopErrorRow>('ErrorSignatureStat').implement({
  description: 'Dead letters sharing one error signature: the message with uuids, timestamps, hex ids and numbers replaced by <uuid>, <ts>, <hex>, <n>.',
  fields: (t) => ({
    signature: t.exposeString('signature', { description: 'Use in `DeadLetterFilter.errorSignatures` to list them.' }),
    count: t.exposeInt('count'),
    firstSeen: t.expose('firstSeen', { type: 'DateTime' }),
    lastSeen: t.expose('lastSeen', { type: 'DateTime' }),
    sampleId: t.id({ description: 'The oldest dead letter with this signature (its first seen; the lowest id among ties).', resolve: (r) => r.sampleId.toString() }),
  }),
});

const TimeBucketRef = builder.objectRef<TimeBucketRow>('TimeBucket').implement({
  fields: (t) => ({ start: t.expose('start', { type: 'DateTime' }), count: t.exposeInt('count') }),
});

const BlockedKeyRef = builder.objectRef<BlockedKeyRow>('BlockedKey').implement({
  description:
    'An ordering key of an ordered event type whose head (its first unfinished event) is EXHAUSTED and holds later events of that type and key back until it is resolved, discarded, requeued or succeeds.',
  fields: (t) => ({
    orderingKey: t.exposeString('orderingKey'),
    eventType: t.exposeString('eventType', { description: 'Keys queue per event type: the same key in another type is another queue.' }),
    headId: t.id({ resolve: (r) => r.headId.toString() }),
    heldBack: t.exposeInt('heldBack', { description: 'Unfinished events of the type and key behind the head.' }),
  }),
});

const BucketSizeEnum = builder.enumType('TimeBucketSize', { values: ['HOUR', 'DAY'] as const, description: 'UTC hours or UTC days.' });

function limitArg(value: number, argument: string): number {
  if (value < 1 || value > MAX_LIMIT) throw badUserInput(`${argument} must be between 1 and ${MAX_LIMIT}`, { argument });
  return value;
}

const StatsRef = builder.objectRef<Stats>('DeadLetterStats').implement({
  description:
    'Figures over the dead letters matching a filter. Each field is computed only when selected. total, byStatus, byEventType, byQueue, byErrorKind and timeSeries are read from hourly rollups when the filter uses only statuses, eventTypes, queues, errorKinds and createdAt (only partial hours at the ends of a createdAt range are scanned); other filters and the other figures scan the matching rows.',
  fields: (t) => ({
    total: t.int({ resolve: (s) => s.total() }),
    byStatus: t.field({ type: [KeyCountRef], description: 'Most first; statuses with none are left out.', resolve: (s) => s.by('status') }),
    byEventType: t.field({ type: [KeyCountRef], resolve: (s) => s.by('eventType') }),
    byQueue: t.field({ type: [KeyCountRef], resolve: (s) => s.by('queue') }),
    byErrorKind: t.field({ type: [KeyCountRef], resolve: (s) => s.by('errorKind') }),
    topErrors: t.field({
      type: [ErrorSignatureStatRef],
      description: 'Most frequent error signatures first (ties by signature).',
      args: { limit: t.arg.int({ defaultValue: 10, required: true }) },
      resolve: (s, args) => s.topErrors(limitArg(args.limit, 'limit')),
    }),
    timeSeries: t.field({
      type: [TimeBucketRef],
      description: `Dead letters created per bucket over [from truncated to its bucket, to), every bucket present (0 when empty); at most ${MAX_BUCKETS} buckets.`,
      args: {
        bucket: t.arg({ type: BucketSizeEnum, required: true }),
        from: t.arg({ type: 'DateTime', required: true }),
        to: t.arg({ type: 'DateTime', required: true }),
      },
      resolve: (s, { bucket, from, to }) => {
        if (from.getTime() >= to.getTime()) throw badUserInput('from must be before to', { argument: 'from' });
        if ((to.getTime() - from.getTime()) / BUCKET_MS[bucket] > MAX_BUCKETS) throw badUserInput(`the range holds more than ${MAX_BUCKETS} buckets`, { argument: 'to' });
        return s.timeSeries(bucket, from, to);
      },
    }),
    oldestPendingCreatedAt: t.field({ type: 'DateTime', nullable: true, resolve: async (s) => (await s.retry()).oldestPendingCreatedAt }),
    oldestPendingAgeSeconds: t.float({ nullable: true, description: 'Seconds since the oldest PENDING event was dead-lettered.', resolve: async (s) => (await s.retry()).oldestPendingAgeSeconds }),
    retrySuccessRate: t.float({
      nullable: true,
      description: 'SUCCEEDED / (SUCCEEDED + EXHAUSTED): of the events whose retrying has ended, the share that got through. Null when none has.',
      resolve: async (s) => {
        const r = await s.retry();
        return r.succeeded + r.exhausted === 0 ? null : r.succeeded / (r.succeeded + r.exhausted);
      },
    }),
    meanAttemptsToSuccess: t.float({ nullable: true, description: 'Mean attempts of SUCCEEDED events; null when none.', resolve: async (s) => (await s.retry()).meanAttemptsToSuccess }),
    blockedKeys: t.field({
      type: [BlockedKeyRef],
      description:
        'Keys of ordered event types whose head event (matching the filter) is EXHAUSTED with later events held back; most held back first. Unordered types never hold events back, so their keys are not listed.',
      args: { limit: t.arg.int({ defaultValue: 50, required: true }) },
      resolve: (s, args) => s.blockedKeys(limitArg(args.limit, 'limit')),
    }),
  }),
});

builder.queryFields((t) => ({
  deadLetterStats: t.field({
    type: StatsRef,
    description: 'Stats for the dead letters matching the filter: counts, top errors, a time series, retry outcomes, blocked keys.',
    args: { filter: t.arg({ type: DeadLetterFilterInput }) },
    resolve: (_root, args, ctx) => {
      return new Stats(ctx.db, parseDeadLetterFilter(args.filter));
    },
  }),
}));
