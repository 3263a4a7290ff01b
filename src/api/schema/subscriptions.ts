import { decodeCursor, encodeCursor } from '../../live/changeCursor.ts';
import type { DeadLetterChangeEvent, DeliveryAttemptEvent, LiveFeed, RemovedDeadLetterRow } from '../../live/liveEvents.ts';
import { builder, type GraphQLContext } from './builder.ts';
import { DeadLetterFilterInput, parseDeadLetterFilter } from './deadLetterFilter.ts';
import { DeadLetterStatusEnum, ErrorKindEnum } from './enums.ts';
import { badUserInput } from './errors.ts';
import { deadLetterChanges, deadLetterStats, deliveryAttemptsFinished, type DeadLetterCounts } from '../../live/subscriberStreams.ts';
import { createGraphQLError } from 'graphql-yoga';

const RemovedDeadLetterRef = builder.objectRef<RemovedDeadLetterRow>('RemovedDeadLetter').implement({
  description: 'What a deleted dead letter leaves behind: its id and the fields subscription filters match on, as they were when it was deleted.',
  fields: (t) => ({
    id: t.id({ resolve: (r) => r.id.toString() }),
    eventType: t.exposeString('eventType'),
    queue: t.exposeString('queue'),
    source: t.exposeString('source'),
    orderingKey: t.exposeString('orderingKey', { nullable: true }),
    status: t.field({ type: DeadLetterStatusEnum, description: 'Its status when it was deleted.', resolve: (r) => r.status }),
    errorKind: t.field({ type: ErrorKindEnum, resolve: (r) => r.errorKind }),
    errorSignature: t.exposeString('errorSignature'),
    attempts: t.exposeInt('attempts'),
    createdAt: t.field({ type: 'DateTime', resolve: (r) => r.createdAt }),
    deletedAt: t.field({ type: 'DateTime', resolve: (r) => r.deletedAt }),
  }),
});

const DeadLetterChangeRef = builder.objectRef<DeadLetterChangeEvent>('DeadLetterChange').implement({
  description:
    'A dead letter as it is after a change, or its deletion (by deleteDeadLetters, retention or SQL). Changes between two reads of the feed coalesce into the latest state.',
  fields: (t) => ({
    cursor: t.string({ description: 'Pass as `after` to resume right after this change.', resolve: (e) => encodeCursor(e.cursor) }),
    isNew: t.boolean({ description: 'True while the row has never been updated since it was inserted (false for a deletion).', resolve: (e) => e.isNew }),
    deleted: t.boolean({ description: 'True when the dead letter was deleted: `deadLetter` is then null and `removed` says what it was.', resolve: (e) => e.removed !== null }),
    deadLetterId: t.id({ description: 'The changed or deleted dead letter.', resolve: (e) => (e.deadLetter?.id ?? e.removed!.id).toString() }),
    deadLetter: t.field({ type: 'DeadLetter' as never, nullable: true, description: 'The row after the change; null when it was deleted.', resolve: (e) => e.deadLetter as never }),
    removed: t.field({ type: RemovedDeadLetterRef, nullable: true, description: 'For a deletion: the id and filter fields of the deleted row.', resolve: (e) => e.removed }),
  }),
});

const DeliveryAttemptFinishedRef = builder.objectRef<DeliveryAttemptEvent>('DeliveryAttemptFinished').implement({
  description: 'A recorded delivery attempt (a retry outcome).',
  fields: (t) => ({
    cursor: t.string({ resolve: (e) => encodeCursor(e.cursor) }),
    attempt: t.field({ type: 'DeliveryAttempt' as never, resolve: (e) => e.attempt as never }),
    deadLetter: t.field({ type: 'DeadLetter' as never, nullable: true, resolve: (e) => e.deadLetter as never }),
  }),
});

const StatusCountRef = builder.objectRef<{ status: string; count: number }>('DeadLetterStatusCount').implement({
  fields: (t) => ({
    status: t.field({ type: DeadLetterStatusEnum, resolve: (s) => s.status as never }),
    count: t.exposeInt('count'),
  }),
});

const DeadLetterCountsRef = builder.objectRef<DeadLetterCounts>('DeadLetterCounts').implement({
  description: 'How many dead letters match the filter, per status (statuses with none are left out).',
  fields: (t) => ({
    total: t.exposeInt('total'),
    byStatus: t.field({ type: [StatusCountRef], resolve: (c) => c.byStatus }),
  }),
});

builder.subscriptionType({ authScopes: { viewer: true } });

builder.subscriptionFields((t) => ({
  deadLetterAdded: t.field({
    type: DeadLetterChangeRef,
    description: 'Every new dead letter matching the filter, in commit order.',
    args: { filter: t.arg({ type: DeadLetterFilterInput }) },
    subscribe: async (_root, args, ctx) => deadLetterChanges(liveFeed(ctx), await liveFilter(ctx, args.filter), { onlyNew: true }),
    resolve: (event) => event,
  }),
  deadLetterChanged: t.field({
    type: DeadLetterChangeRef,
    description:
      'Every insert and change (status, edit, requeue) of a dead letter matching the filter, in commit order. With `after` (a cursor from an earlier event), first replays everything since that change, then continues live, without gaps or duplicates.',
    args: { filter: t.arg({ type: DeadLetterFilterInput }), after: t.arg.string() },
    subscribe: async (_root, args, ctx) => {
      const after = args.after == null ? undefined : decodeCursor(args.after);
      if (after === null) throw badUserInput('after is not a change cursor issued by this service', { argument: 'after' });
      const filter = await liveFilter(ctx, args.filter);
      return deadLetterChanges(liveFeed(ctx), filter, { onlyNew: false, after });
    },
    resolve: (event) => event,
  }),
  deliveryAttemptFinished: t.field({
    type: DeliveryAttemptFinishedRef,
    description: 'Every recorded delivery attempt whose dead letter matches the filter.',
    args: { filter: t.arg({ type: DeadLetterFilterInput }) },
    subscribe: async (_root, args, ctx) => deliveryAttemptsFinished(liveFeed(ctx), await liveFilter(ctx, args.filter)),
    resolve: (event) => event,
  }),
  deadLetterStatsChanged: t.field({
    type: DeadLetterCountsRef,
    description: 'Counts per status for the filter: once at once, then after changes, at most once a second.',
    args: { filter: t.arg({ type: DeadLetterFilterInput }) },
    subscribe: (_root, args, ctx) => deadLetterStats(liveFeed(ctx), ctx.db, parseDeadLetterFilter(args.filter)),
    resolve: (counts) => counts,
  }),
}));

/** The parsed filter: a groupId is matched in memory on each row's own error_group_id. */
async function liveFilter(_ctx: GraphQLContext, input: Parameters<typeof parseDeadLetterFilter>[0]) {
  return parseDeadLetterFilter(input);
}

export function liveFeed(ctx: GraphQLContext): LiveFeed {
  if (!ctx.live) throw createGraphQLError('the live feed is not running in this process', { extensions: { code: 'SERVICE_UNAVAILABLE' } });
  return ctx.live;
}
