// Broker bridges (LAZARUS_BRIDGES): what each has taken in, lag, rate and last error (any viewer),
// and pause/resume (admins). Answers carry the kind's description (host and place), never settings.
import { setBridgePause } from '../../domain/bridgeStates.ts';
import { readBridgePauses, type BridgePause } from '../../reads/bridgeStates.ts';
import type { BridgeStatus } from '../../workers/bridges/bridgeBoard.ts';
import { builder } from './builder.ts';
import { badUserInput } from './errors.ts';

type BridgeView = { status: BridgeStatus; pause: BridgePause | null };

const BridgeStateEnum = builder.enumType('BridgeState', {
  description: 'CONNECTED: consuming; CONNECTING: opening (or waiting to, after a failure: see lastError); DISCONNECTED: the broker failed, retried with backoff; PAUSED: an operator paused it.',
  values: ['CONNECTED', 'CONNECTING', 'DISCONNECTED', 'PAUSED'] as const,
});

const BridgePoisonRef = builder.objectRef<[string, number]>('BridgePoison').implement({
  fields: (t) => ({
    reason: t.string({ description: 'not_utf8, not_json, too_large, bad_headers or unstorable.', resolve: ([reason]) => reason }),
    count: t.int({ resolve: ([, n]) => n }),
  }),
});

const BridgeRef = builder.objectRef<BridgeView>('Bridge').implement({
  description: 'A broker bridge: takes the dead letters of a broker queue in (docs/brokers.md, "Bridges in"). Counts are this instance’s since it started.',
  fields: (t) => ({
    name: t.string({ resolve: (b) => b.status.name }),
    kind: t.string({ description: 'e.g. rabbitmq.', resolve: (b) => b.status.kind }),
    description: t.string({ description: 'Kind, host and place; never a credential.', resolve: (b) => b.status.description }),
    state: t.field({
      type: BridgeStateEnum,
      resolve: (b) => (b.pause ? 'PAUSED' : b.status.connection === 'PAUSED' ? 'CONNECTING' : b.status.connection),
    }),
    paused: t.boolean({ description: 'Paused by an operator; stays paused across restarts.', resolve: (b) => b.pause !== null }),
    pausedBy: t.string({ nullable: true, resolve: (b) => b.pause?.pausedBy ?? null }),
    pausedAt: t.field({ type: 'DateTime', nullable: true, resolve: (b) => b.pause?.pausedAt ?? null }),
    received: t.int({ description: 'Messages taken from the broker (a redelivery counts again).', resolve: (b) => b.status.received }),
    recorded: t.int({ description: 'Dead letters stored.', resolve: (b) => b.status.recorded }),
    duplicates: t.int({ description: 'Messages already stored under their dedupe key (redeliveries): acked, nothing stored.', resolve: (b) => b.status.duplicates }),
    poison: t.int({
      description: 'Poison messages: stored as bytes (a body that claimed JSON and was not) or refused.',
      resolve: (b) => Object.values(b.status.poison).reduce((sum, n) => sum + (n ?? 0), 0),
    }),
    poisonByReason: t.field({ type: [BridgePoisonRef], resolve: (b) => Object.entries(b.status.poison).map(([r, n]) => [r, n ?? 0] as [string, number]) }),
    refused: t.int({ description: 'Messages refused back to the broker, never stored (RabbitMQ: nacked to the queue’s own dead-letter exchange).', resolve: (b) => b.status.refused }),
    lag: t.int({ nullable: true, description: 'Messages waiting at the source when last asked (every 2 s while running).', resolve: (b) => b.status.lag }),
    ratePerSecond: t.float({ description: 'Dead letters stored per second over the last minute.', resolve: (b) => b.status.ratePerSecond() }),
    lastError: t.string({ nullable: true, resolve: (b) => b.status.lastError }),
    lastErrorAt: t.field({ type: 'DateTime', nullable: true, resolve: (b) => b.status.lastErrorAt }),
  }),
});

async function viewOf(ctx: { db: Parameters<typeof readBridgePauses>[0] }, statuses: BridgeStatus[]): Promise<BridgeView[]> {
  const pauses = await readBridgePauses(ctx.db, statuses.map((s) => s.name));
  return statuses.map((status) => ({ status, pause: pauses.get(status.name) ?? null }));
}

builder.queryFields((t) => ({
  bridges: t.field({
    type: [BridgeRef],
    description: 'The broker bridges this instance runs (LAZARUS_BRIDGES), in declaration order.',
    authScopes: { viewer: true },
    resolve: (_root, _args, ctx) => viewOf(ctx, ctx.bridges?.list() ?? []),
  }),
}));

const pauseField = (paused: boolean) => builder.mutationField(paused ? 'pauseBridge' : 'resumeBridge', (t) => t.field({
  type: BridgeRef,
  description: paused
    ? 'Stops a bridge taking messages in, on every instance, until resumed (kept across restarts). Messages wait at the broker.'
    : 'Lets a paused bridge take messages in again.',
  authScopes: { admin: true },
  args: { name: t.arg.string({ required: true }) },
  resolve: async (_root, { name }, ctx) => {
    const status = ctx.bridges?.get(name);
    if (!status) throw badUserInput(`no bridge named ${JSON.stringify(name.slice(0, 100))} is declared on this instance`, { field: 'name', reason: 'UNKNOWN_BRIDGE' });
    await setBridgePause(ctx.db, name, paused, ctx.principal!.name);
    ctx.bridges!.poke(name);
    return (await viewOf(ctx, [status]))[0]!;
  },
}));
pauseField(true);
pauseField(false);
