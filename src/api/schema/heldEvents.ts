import DataLoader from 'dataloader';
import { readHeldEventCounts, readHeldEvents, type HeldCount, type HeldEvent } from '../../reads/heldEvents.ts';
import { builder, type GraphQLContext } from './builder.ts';

const HeldReasonEnum = builder.enumType('HeldReason', {
  description: 'Why a PENDING event is not being delivered.',
  values: {
    PAUSED: { description: 'Its type is paused: resuming the type releases it.' },
    NO_TARGET: { description: 'Its policy has no delivery target (and no in-process handler takes the type): setting a target on that policy releases it.' },
    RELEASING: { description: 'A ramped release (a redrive started by saving its policy) holds it until the redrive reaches it; requeuing it releases it at once.' },
    BLOCKED_KEY: { description: 'Its type is ordered and its ordering key’s head is EXHAUSTED: requeuing, resolving or discarding the head releases it.' },
  },
});

const HeldRef = builder.objectRef<HeldEvent>('DeadLetterHold').implement({
  description: 'Why a PENDING event waits, and what releases it.',
  fields: (t) => ({
    reason: t.field({ type: HeldReasonEnum, resolve: (h) => h.reason }),
    policyEventType: t.exposeString('policyEventType', { description: 'The policy that holds it: the type’s own, or "*".' }),
    headId: t.id({ nullable: true, description: 'BLOCKED_KEY: the EXHAUSTED head of its ordering key.', resolve: (h) => h.headId?.toString() ?? null }),
  }),
});

const HeldCountRef = builder.objectRef<HeldCount>('HeldEventCount').implement({
  description: 'How many events of one type are held, and why.',
  fields: (t) => ({
    eventType: t.exposeString('eventType'),
    policyEventType: t.exposeString('policyEventType', { description: 'The policy that governs the type: its own, or "*".' }),
    reason: t.field({ type: HeldReasonEnum, resolve: (c) => c.reason }),
    count: t.exposeInt('count'),
  }),
});

// A page of 100 rows asks for 100 holds in one pass of the executor: one statement per request.
const loaders = new WeakMap<GraphQLContext, DataLoader<bigint, HeldEvent | null>>();
function holdOf(ctx: GraphQLContext, id: bigint): Promise<HeldEvent | null> {
  let loader = loaders.get(ctx);
  if (!loader) {
    loader = new DataLoader<bigint, HeldEvent | null>(async (ids) => {
      const byId = new Map((await readHeldEvents(ctx.db, [...new Set(ids)], ctx.inProcessEventTypes ?? [])).map((h) => [h.id, h]));
      return ids.map((id) => byId.get(id) ?? null);
    }, { cache: false });
    loaders.set(ctx, loader);
  }
  return loader.load(id);
}

builder.prismaObjectFields('DeadLetter', (t) => ({
  held: t.field({
    type: HeldRef,
    nullable: true,
    description: 'Why this PENDING event is not being delivered (paused type, no target, blocked ordering key); null when it is not held.',
    // By id alone (the statement reads the state), so a page need not read its rows' status for it.
    resolve: (d, _args, ctx) => holdOf(ctx, d.id),
  }),
}));

builder.queryFields((t) => ({
  heldEventCounts: t.field({
    type: [HeldCountRef],
    description: 'Held events per event type and reason, most first: what a paused type, a policy without a target or a blocked ordering key keeps from delivery.',
    resolve: (_root, _args, ctx) => readHeldEventCounts(ctx.db, ctx.inProcessEventTypes ?? []),
  }),
}));
