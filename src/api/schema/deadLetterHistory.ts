import DataLoader from 'dataloader';
import { ActionKind } from '../../generated/prisma/enums.ts';
import type { DeadLetterAction, DeliveryAttempt } from '../../generated/prisma/client.ts';
import { readDeadLetterActions, readDeliveryAttempts } from '../../reads/history.ts';
import { builder, type GraphQLContext } from './builder.ts';
import { exactJson } from './exactJson.ts';
import { DeliveryAttemptRef } from './deadLetter.ts';

export const ActionKindEnum = builder.enumType(ActionKind, {
  name: 'ActionKind',
  description: 'What a person or producer did to a dead letter.',
});

export const DeadLetterActionRef = builder.prismaObject('DeadLetterAction', {
  description: 'One entry of a dead letter’s history: who did what, when and why. Payload edits keep the payload before and after.',
  fields: (t) => ({
    id: t.id({ resolve: (a) => a.id.toString() }),
    action: t.expose('action', { type: ActionKindEnum }),
    actor: t.exposeString('actor'),
    reason: t.exposeString('reason', { nullable: true }),
    before: t.field({ type: 'JSON', nullable: true, resolve: (a, _args, ctx) => exactJson(ctx, 'dead_letter_actions', 'before', a), description: 'For PAYLOAD_EDITED, PAYLOAD_TRANSFORMED and TRANSFORM_UNDONE: `{ payload, status }` before the change (restore `before.payload` to undo an edit); for DELETED: the deleted row.' }),
    after: t.field({ type: 'JSON', nullable: true, resolve: (a, _args, ctx) => exactJson(ctx, 'dead_letter_actions', 'after', a), description: 'For PAYLOAD_EDITED, PAYLOAD_TRANSFORMED and TRANSFORM_UNDONE: `{ payload, status }` after the change.' }),
    redriveId: t.id({ nullable: true, resolve: (a) => a.redriveId?.toString() ?? null }),
    transformId: t.id({
      nullable: true,
      description: 'For PAYLOAD_TRANSFORMED and TRANSFORM_UNDONE: the transform (see `transform(id)`).',
      resolve: (a) => a.transformId?.toString() ?? null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

interface TimelineEntry {
  at: Date;
  attempt: DeliveryAttempt | null;
  action: DeadLetterAction | null;
}

const TimelineEntryRef = builder.objectRef<TimelineEntry>('TimelineEntry').implement({
  description: 'One step of a dead letter’s story: exactly one of `attempt` and `action` is set.',
  fields: (t) => ({
    at: t.expose('at', { type: 'DateTime', description: 'When the attempt started or the action was taken.' }),
    attempt: t.field({ type: DeliveryAttemptRef, nullable: true, resolve: (e) => e.attempt }),
    action: t.field({ type: DeadLetterActionRef, nullable: true, resolve: (e) => e.action }),
  }),
});

// A page of 50 dead letters asks for 50 histories (and 50 attempt lists for timelines) in one
// pass of the executor. Each request's asks are gathered by a DataLoader and read with one
// statement per kind, instead of one statement per dead letter: a 50-row page with `timeline` made
// 101 statements.
const actionsOf = perRequestLoader<DeadLetterAction>((ctx, ids) => readDeadLetterActions(ctx.db, ids));
const attemptsOf = perRequestLoader<DeliveryAttempt>((ctx, ids) => readDeliveryAttempts(ctx.db, ids));

/**
 * `read(ctx, deadLetterId)`: the rows of one dead letter, from one statement for all the ids the
 * same request asks for together. Rows keep the order the statement gives them. Nothing is
 * cached between batches, so a mutation that changes a history and then shows it reads it anew.
 */
function perRequestLoader<R extends { deadLetterId: bigint }>(load: (ctx: GraphQLContext, ids: bigint[]) => Promise<R[]>) {
  const loaders = new WeakMap<GraphQLContext, DataLoader<bigint, R[]>>();
  return (ctx: GraphQLContext, id: bigint): Promise<R[]> => {
    let loader = loaders.get(ctx);
    if (!loader) {
      loader = new DataLoader<bigint, R[]>(
        async (ids) => {
          const byId = new Map<bigint, R[]>();
          for (const row of await load(ctx, [...new Set(ids)])) {
            const list = byId.get(row.deadLetterId);
            if (list) list.push(row);
            else byId.set(row.deadLetterId, [row]);
          }
          return ids.map((key) => byId.get(key) ?? []);
        },
        { cache: false },
      );
      loaders.set(ctx, loader);
    }
    return loader.load(id);
  };
}

builder.prismaObjectFields('DeadLetter', (t) => ({
  history: t.field({
    type: [DeadLetterActionRef],
    description: 'Every operator and producer action on this event, oldest first.',
    resolve: (d, _args, ctx) => actionsOf(ctx, d.id),
  }),
  timeline: t.field({
    type: [TimelineEntryRef],
    description: 'Delivery attempts and actions merged in time order (actions first on a tie).',
    resolve: async (d, _args, ctx) => {
      const [actions, attempts] = await Promise.all([actionsOf(ctx, d.id), attemptsOf(ctx, d.id)]);
      const entries: (TimelineEntry & { rank: number })[] = [
        ...actions.map((action, i) => ({ at: action.createdAt, action, attempt: null, rank: i })),
        ...attempts.map((attempt, i) => ({ at: attempt.startedAt, action: null, attempt, rank: actions.length + i })),
      ];
      // A stable sort keeps history order (by id) and attempt order (by number) inside a tie.
      return entries.sort((a, b) => a.at.getTime() - b.at.getTime() || a.rank - b.rank);
    },
  }),
}));
