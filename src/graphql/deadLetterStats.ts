import { deadLetterWhereSql, type DeadLetterFilter } from '../domain/deadLetterFilter.ts';
import { intersectRange, rollupPlan, signatureRollupPlan, type RollupPlan } from '../domain/statsRollups.ts';
import { rollupStatsCountsSql } from '../db/sql/rollupStatsCounts.ts';
import { rollupTimeSeriesSql } from '../db/sql/rollupTimeSeries.ts';
import { blockedKeysSql, type BlockedKeyRow } from '../db/sql/blockedKeys.ts';
import { deadLetterRetryStatsSql, rollupRetryStatsSql, type RetryStatsRow } from '../db/sql/deadLetterRetryStats.ts';
import { deadLetterStatsCountsSql, type StatsCountRow } from '../db/sql/deadLetterStatsCounts.ts';
import { deadLetterTimeSeriesSql, type TimeBucketRow } from '../db/sql/deadLetterTimeSeries.ts';
import { deadLetterTopErrorsSql, type TopErrorRow } from '../db/sql/deadLetterTopErrors.ts';
import type { Db } from '../db/createDb.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { builder } from './builder.ts';
import { DeadLetterFilterInput, parseDeadLetterFilter } from './deadLetterFilter.ts';
import { badUserInput } from './errors.ts';

const MAX_BUCKETS = 2000;
const MAX_LIMIT = 500;

// Each figure runs its own statement only when selected; figures that share a scan share a promise.
// Counts, the time series, the retry figures and top errors read the rollups when the filter allows (see
// statsRollups.ts).
class Stats {
  #counts?: Promise<StatsCountRow[]>;
  #retry?: Promise<RetryStatsRow>;
  readonly db: Db;
  readonly filter: DeadLetterFilter;
  readonly where: Prisma.Sql;
  /** How the rollups answer the filter, or null: see statsRollups.ts. */
  readonly plan: RollupPlan | null;
  constructor(db: Db, filter: DeadLetterFilter) {
    this.db = db;
    this.filter = filter;
    this.where = deadLetterWhereSql(filter);
    this.plan = rollupPlan(filter);
  }
  counts() {
    this.#counts ??= this.db.$queryRaw<StatsCountRow[]>(this.plan ? rollupStatsCountsSql(this.plan) : deadLetterStatsCountsSql(this.where));
    return this.#counts;
  }
  async by(dimension: StatsCountRow['dimension']) {
    const rows = (await this.counts()).filter((r) => r.dimension === dimension);
    return rows.map((r) => ({ key: r.key!, count: r.count })).sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1));
  }
  retry() {
    this.#retry ??= this.db
      .$queryRaw<RetryStatsRow[]>(this.plan ? rollupRetryStatsSql(this.plan, this.where) : deadLetterRetryStatsSql(this.where))
      .then((rows) => rows[0]!);
    return this.#retry;
  }
}

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
    total: t.int({ resolve: async (s) => (await s.counts()).find((r) => r.dimension === 'total')?.count ?? 0 }),
    byStatus: t.field({ type: [KeyCountRef], description: 'Most first; statuses with none are left out.', resolve: (s) => s.by('status') }),
    byEventType: t.field({ type: [KeyCountRef], resolve: (s) => s.by('eventType') }),
    byQueue: t.field({ type: [KeyCountRef], resolve: (s) => s.by('queue') }),
    byErrorKind: t.field({ type: [KeyCountRef], resolve: (s) => s.by('errorKind') }),
    topErrors: t.field({
      type: [ErrorSignatureStatRef],
      description: 'Most frequent error signatures first (ties by signature).',
      args: { limit: t.arg.int({ defaultValue: 10, required: true }) },
      resolve: (s, args) => s.db.$queryRaw<TopErrorRow[]>(deadLetterTopErrorsSql(s.where, limitArg(args.limit, 'limit'), signatureRollupPlan(s.filter, s.plan))),
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
        const size = bucket === 'HOUR' ? 3_600_000 : 86_400_000;
        if ((to.getTime() - from.getTime()) / size > MAX_BUCKETS) throw badUserInput(`the range holds more than ${MAX_BUCKETS} buckets`, { argument: 'to' });
        // The series covers [from truncated to its bucket, to): count the filter within that range.
        const lo = new Date(Math.floor(from.getTime() / size) * size);
        const plan = rollupPlan({ ...s.filter, createdAt: intersectRange(s.filter.createdAt, { from: lo, to }) });
        return s.db.$queryRaw<TimeBucketRow[]>(plan ? rollupTimeSeriesSql(plan, bucket, lo, to) : deadLetterTimeSeriesSql(s.where, bucket, from, to));
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
      resolve: (s, args) => s.db.$queryRaw<BlockedKeyRow[]>(blockedKeysSql(s.where, limitArg(args.limit, 'limit'))),
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
