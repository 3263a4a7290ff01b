// Requeue entry point and throttled redrives: a requeue by filter above the configured threshold
// becomes a tracked redrive run in batches by src/workers/redriveRunner.ts.
import { InvalidTransitionError, NoSourceError, ValidationError } from '../../domain/errors.ts';
import { RESULT_ID_SAMPLE, type Destination, type Selection } from '../../domain/operatorActions.ts';
import { MAX_GUARD_WINDOW, MAX_RAMP_SECONDS, MAX_REDRIVE_RATE_PER_SECOND, rampRatePerSecond, type RedriveLimitsChange } from '../../domain/redriveLimits.ts';
import { limitsOf, moveRedrive, RedriveLimitsError, RedriveNotFoundError, requeueOrStartRedrive, type RequeueOutcome } from '../../domain/redrives.ts';
import { DEFAULT_WRITE_CONFIG } from '../../domain/writeConfig.ts';
import { RedriveActionKind, RedrivePausedBy, RedriveStatus } from '../../generated/prisma/enums.ts';
import {
  DEFAULT_REDRIVE_EVENT_PAGE, isRedriveSettled, MAX_REDRIVE_EVENT_PAGE, MAX_REDRIVE_FAILURE_GROUPS, readGuardWindowOf, readRedrive,
  readRedriveEventPage, readRedriveFailureGroups, readRedriveOrThrow, readRedriveOutcomes, readRedrives,
  type RedriveFailureGroup, type RedriveOutcome, type RedriveOutcomeCounts,
} from '../../reads/redrives.ts';
import type { Principal } from '../auth/principal.ts';
import { builder, type GraphQLContext } from './builder.ts';
import { DeadLetterRef } from './deadLetter.ts';
import { ErrorGroupRef } from './errorGroup.ts';
import { parseId } from './ids.ts';
import { badUserInput, pageArgumentsAsBadInput } from './errors.ts';
import { MutationErrorRef } from './writeErrors.ts';

const MAX_REDRIVES_LISTED = 100;

export const RequeueDestinationEnum = builder.enumType('RequeueDestination', {
  description: 'Where requeued events are delivered.',
  values: {
    POLICY: { description: 'The target of the event type’s retry policy (the default).' },
    SOURCE: { description: 'Back where a broker bridge took the event from (its origin: an AMQP queue, a NATS subject, a Redis stream), redirects applied.' },
  } as const,
});

builder.objectType(NoSourceError, {
  name: 'NoSourceError',
  description: 'A requeue to SOURCE selected events that cannot go back where they came from: no origin, or its bridge is not declared (code VALIDATION). Nothing was written.',
  interfaces: [MutationErrorRef],
  isTypeOf: (e) => e instanceof NoSourceError,
  fields: (t) => ({
    count: t.exposeInt('count', { description: 'Selected events without a usable source.' }),
    ids: t.idList({ description: `The first ${RESULT_ID_SAMPLE} of them.`, resolve: (e) => e.ids.map(String) }),
  }),
});
const actorOf = (ctx: GraphQLContext): string => (ctx.principal as Principal).name;

const RedriveStatusEnum = builder.enumType(RedriveStatus, {
  name: 'RedriveStatus',
  description:
    'The runner’s state. RUNNING ⇄ PAUSED → CANCELLED; RUNNING → COMPLETED; RUNNING → FAILED when 5 batches in a row fail for a reason other than database trouble (see `error`; FAILED can be resumed or cancelled). ' +
    'COMPLETED means every event was requeued (or skipped), not that it was delivered: see `Redrive.settled` and `Redrive.outcomes`.',
});

const RedriveOutcomeEnum = builder.enumType('RedriveOutcome', {
  description:
    'What became of an event a redrive requeued, now. DELIVERED: SUCCEEDED. FAILING: PENDING or PROCESSING after at least one failed delivery since the requeue (retrying). ' +
    'EXHAUSTED, RESOLVED, DISCARDED: that status. PENDING: PENDING or PROCESSING with no delivery answered since the requeue yet.',
  values: ['DELIVERED', 'FAILING', 'EXHAUSTED', 'RESOLVED', 'DISCARDED', 'PENDING'] as const satisfies readonly RedriveOutcome[],
});

const RedriveOutcomesRef = builder.objectRef<RedriveOutcomeCounts>('RedriveOutcomes').implement({
  description:
    'The events a redrive requeued (not those it skipped or has yet to reach), counted by what became of them since, now. Counted over the redrive’s own events (each looked up by key), once per request.',
  fields: (t) => ({
    delivered: t.exposeInt('DELIVERED', { description: 'SUCCEEDED.' }),
    failing: t.exposeInt('FAILING', { description: 'Failed since the requeue and retrying (PENDING or PROCESSING).' }),
    exhausted: t.exposeInt('EXHAUSTED'),
    resolved: t.exposeInt('RESOLVED'),
    discarded: t.exposeInt('DISCARDED'),
    pending: t.exposeInt('PENDING', { description: 'Not delivered yet and no failure since the requeue: waiting for, or in, their first delivery.' }),
    deleted: t.exposeInt('DELETED', { description: 'Deleted since.' }),
  }),
});

const RedriveFailureGroupRef = builder.objectRef<RedriveFailureGroup>('RedriveErrorGroup').implement({
  description: 'An error group that events of a redrive still failing or exhausted belong to.',
  fields: (t) => ({
    group: t.field({ type: ErrorGroupRef, resolve: (g) => g.group }),
    count: t.int({ description: 'failing + exhausted.', resolve: (g) => g.failing + g.exhausted }),
    failing: t.exposeInt('failing'),
    exhausted: t.exposeInt('exhausted'),
  }),
});

// `outcomes` and `settled` in one request share one count.
const outcomesByRequest = new WeakMap<GraphQLContext, Map<bigint, Promise<RedriveOutcomeCounts>>>();
function outcomesOf(ctx: GraphQLContext, id: bigint): Promise<RedriveOutcomeCounts> {
  let byId = outcomesByRequest.get(ctx);
  if (!byId) outcomesByRequest.set(ctx, (byId = new Map()));
  let counts = byId.get(id);
  if (!counts) byId.set(id, (counts = readRedriveOutcomes(ctx.db, id)));
  return counts;
}

const RedrivePausedByEnum = builder.enumType(RedrivePausedBy, {
  name: 'RedrivePausedBy',
  description: 'GUARD: the redrive paused itself because its deliveries failed too often; OPERATOR: someone paused it.',
});
const RedriveActionKindEnum = builder.enumType(RedriveActionKind, { name: 'RedriveActionKind' });

export const RedriveLimitsInput = builder.inputType('RedriveLimitsInput', {
  description:
    'How fast a redrive requeues and when it stops itself. On start, absent fields take defaults (maxRatePerSecond: ratePerSecond or the ' +
    'configured rate; startRatePerSecond: the maximum; rampSeconds: 0; no guard; windowSize: 100). On resume, absent fields keep their value ' +
    'and pauseWhenFailureRateAbove: null removes the guard. Out-of-range values are BAD_USER_INPUT and nothing is written.',
  fields: (t) => ({
    startRatePerSecond: t.int({ description: `Events per second when the ramp starts (and again on every resume), 1 to ${MAX_REDRIVE_RATE_PER_SECOND}, at most maxRatePerSecond.` }),
    maxRatePerSecond: t.int({ description: `Events per second once the ramp is done, 1 to ${MAX_REDRIVE_RATE_PER_SECOND}.` }),
    rampSeconds: t.int({ description: `Seconds to go linearly from the start rate to the maximum, 0 to ${MAX_RAMP_SECONDS}.` }),
    pauseWhenFailureRateAbove: t.float({
      description: 'The guard, 0 to 1: pause the redrive when the share of failed deliveries among the last windowSize delivery outcomes of its events is above this.',
    }),
    windowSize: t.int({ description: `Delivery outcomes the guard looks at, 1 to ${MAX_GUARD_WINDOW}; it judges only a full window.` }),
  }),
});

type LimitsArg = { [K in keyof RedriveLimitsChange]?: number | null } | null | undefined;

/** The input as a change (absent stays absent; an explicit null guard clears it). */
export function limitsChangeOf(input: LimitsArg): RedriveLimitsChange | null {
  if (!input) return null;
  const change: RedriveLimitsChange = {};
  for (const [key, value] of Object.entries(input)) if (value !== undefined) change[key as keyof RedriveLimitsChange] = value;
  return change;
}

/** Runs `fn`, answering out-of-range limits as BAD_USER_INPUT naming the argument. */
async function limitsAsBadInput<T>(argument: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof RedriveLimitsError) {
      // The older constant rate sits beside the limits in RequeueDeadLettersInput.
      const path = error.field === 'ratePerSecond' ? argument.replace(/\.redriveLimits$/, '.ratePerSecond') : `${argument}.${error.field}`;
      throw badUserInput(error.message, { argument: path });
    }
    throw error;
  }
}

const RedriveGuardWindowRef = builder.objectRef<{ outcomes: number; failures: number }>('RedriveGuardWindow').implement({
  description: 'The delivery outcomes the guard judges now (since the redrive started or last resumed).',
  fields: (t) => ({
    outcomes: t.exposeInt('outcomes', { description: 'Outcomes in the window, at most windowSize.' }),
    failures: t.exposeInt('failures'),
    failureRate: t.float({ nullable: true, resolve: (w) => (w.outcomes === 0 ? null : w.failures / w.outcomes) }),
  }),
});

builder.prismaObject('RedriveAction', {
  description: 'One change of a redrive: started, paused (by an operator or its guard), resumed, cancelled, failed, completed.',
  fields: (t) => ({
    id: t.id({ resolve: (a) => a.id.toString() }),
    action: t.expose('action', { type: RedriveActionKindEnum }),
    actor: t.exposeString('actor', { description: `Who: an API key's name, or redrive-guard / the runner's owner id.` }),
    reason: t.exposeString('reason', { nullable: true }),
    before: t.expose('before', { type: 'JSON', nullable: true, description: 'Status and limits before.' }),
    after: t.expose('after', { type: 'JSON', nullable: true, description: 'Status and limits after (a guard pause adds its window).' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

builder.objectType(RedriveNotFoundError, {
  name: 'RedriveNotFoundError',
  interfaces: [MutationErrorRef],
  isTypeOf: (e) => e instanceof RedriveNotFoundError,
  fields: (t) => ({ id: t.id({ resolve: (e) => e.id.toString() }) }),
});

builder.prismaObject('Redrive', {
  description: 'A throttled, resumable requeue of many events.',
  fields: (t) => ({
    id: t.id({ resolve: (r) => r.id.toString() }),
    status: t.expose('status', { type: RedriveStatusEnum }),
    filter: t.expose('filter', { type: 'JSON', description: 'The filter as given.' }),
    ratePerSecond: t.exposeInt('ratePerSecond', { description: 'The maximum rate (the same as maxRatePerSecond).' }),
    maxRatePerSecond: t.exposeInt('ratePerSecond'),
    startRatePerSecond: t.int({ resolve: (r) => r.startRatePerSecond ?? r.ratePerSecond }),
    rampSeconds: t.exposeInt('rampSeconds'),
    rampStartedAt: t.expose('rampStartedAt', { type: 'DateTime', description: 'When the ramp (re)started: at start and on every resume.' }),
    currentRatePerSecond: t.float({
      nullable: true,
      description: 'The ramp’s rate now, events per second (null unless RUNNING).',
      resolve: (r) => (r.status === 'RUNNING' ? rampRatePerSecond(limitsOf(r), (Date.now() - r.rampStartedAt.getTime()) / 1000) : null),
    }),
    pauseWhenFailureRateAbove: t.exposeFloat('pauseWhenFailureRateAbove', { nullable: true }),
    windowSize: t.exposeInt('windowSize'),
    guardWindow: t.field({
      type: RedriveGuardWindowRef,
      nullable: true,
      description: 'What the guard sees now (null without a guard).',
      resolve: (r, _args, ctx) => (r.pauseWhenFailureRateAbove === null ? null : readGuardWindowOf(ctx.db, r)),
    }),
    pausedBy: t.expose('pausedBy', { type: RedrivePausedByEnum, nullable: true, description: 'Set while PAUSED.' }),
    pausedReason: t.exposeString('pausedReason', { nullable: true, description: 'Why it is PAUSED: the guard’s measurement, or the operator’s reason.' }),
    history: t.relation('actions', { query: { orderBy: { id: 'asc' } }, description: 'Every change of this redrive, oldest first.' }),
    resetAttempts: t.exposeBoolean('resetAttempts'),
    force: t.exposeBoolean('force'),
    destination: t.field({ type: RequeueDestinationEnum, resolve: (r) => r.destination as Destination, description: 'Where its events are delivered.' }),
    reason: t.exposeString('reason', { nullable: true }),
    total: t.exposeInt('total', { description: 'Events selected when it started.' }),
    processed: t.exposeInt('processed'),
    requeued: t.exposeInt('requeued'),
    skipped: t.exposeInt('skipped', { description: 'No longer eligible when their turn came (e.g. PROCESSING, resolved meanwhile).' }),
    progress: t.float({ description: 'processed / total, from 0 to 1.', resolve: (r) => (r.total === 0 ? 1 : r.processed / r.total) }),
    createdBy: t.exposeString('createdBy'),
    error: t.exposeString('error', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true, description: 'When the runner stopped (COMPLETED, CANCELLED, FAILED); deliveries may go on: see settled.' }),
    outcomes: t.field({
      type: RedriveOutcomesRef,
      description: 'What became of the events it requeued so far, now.',
      resolve: (r, _args, ctx) => outcomesOf(ctx, r.id),
    }),
    settled: t.boolean({
      description:
        'True when the redrive is done: the runner finished (COMPLETED or CANCELLED) and every event it requeued is in an end state (delivered, exhausted, resolved, discarded or deleted), none pending or failing.',
      resolve: async (r, _args, ctx) => (r.status === 'COMPLETED' || r.status === 'CANCELLED') && isRedriveSettled(r.status, await outcomesOf(ctx, r.id)),
    }),
    errorGroups: t.field({
      type: [RedriveFailureGroupRef],
      description: `The error groups its FAILING and EXHAUSTED events belong to, most such events first: \`first\` of them, 1 to ${MAX_REDRIVE_FAILURE_GROUPS}.`,
      args: { first: t.arg.int({ required: true, defaultValue: 5 }) },
      resolve: (r, args, ctx) => pageArgumentsAsBadInput(() => readRedriveFailureGroups(ctx.db, r.id, args.first)),
    }),
    events: t.connection(
      {
        type: DeadLetterRef,
        description: `The stored events it requeued, by id ascending, of one outcome when given. Pages hold ${DEFAULT_REDRIVE_EVENT_PAGE} by default, at most ${MAX_REDRIVE_EVENT_PAGE}; forward only (first/after).`,
        args: { outcome: t.arg({ type: RedriveOutcomeEnum }) },
        resolve: (r, args, ctx) => pageArgumentsAsBadInput(() => readRedriveEventPage(ctx.db, r.id, args)) as never,
      },
      { name: 'RedriveEventConnection' },
      { name: 'RedriveEventEdge' },
    ),
  }),
});

export const RequeueOutcomeRef = builder.objectRef<RequeueOutcome>('RequeueResult').implement({
  description: 'What a requeue changed (or, for a dry run, would change), or the redrive that will.',
  fields: (t) => ({
    count: t.exposeInt('count', { description: 'Events requeued (for a redrive: selected, to be requeued by it).' }),
    ids: t.idList({ description: `The first ${RESULT_ID_SAMPLE} affected ids, ascending (empty for a redrive).`, resolve: (r) => r.ids.map(String) }),
    dryRun: t.exposeBoolean('dryRun', { description: 'True when nothing was written.' }),
    withoutSource: t.int({
      nullable: true,
      description: 'For a requeue to SOURCE: selected events with no usable source (no origin, or its bridge is not declared). ' +
        'A dry run counts them; a real requeue with any is refused (NoSourceError). Null for a requeue to POLICY.',
      resolve: (r) => r.withoutSource ?? null,
    }),
    redrive: t.prismaField({
      type: 'Redrive',
      nullable: true,
      description: 'Set when the requeue was large enough to become a throttled redrive.',
      resolve: (query, r, _args, ctx) => (r.redriveId === null ? null : readRedrive(ctx.db, r.redriveId, query)),
    }),
  }),
});

interface RequeueArgs {
  dryRun?: boolean | null;
  at?: Date | null;
  resetAttempts?: boolean | null;
  force?: boolean | null;
  reason?: string | null;
  ratePerSecond?: number | null;
  redriveLimits?: LimitsArg;
  destination?: Destination | null;
}

export async function requeueOrRedrive(ctx: GraphQLContext, actor: string, input: RequeueArgs, selection: Selection): Promise<RequeueOutcome> {
  return limitsAsBadInput('input.redriveLimits', () =>
    requeueOrStartRedrive(ctx.db, actor, ctx.writeConfig ?? DEFAULT_WRITE_CONFIG, {
      selection,
      dryRun: input.dryRun ?? false,
      at: input.at ?? null,
      resetAttempts: input.resetAttempts ?? false,
      force: input.force ?? false,
      reason: input.reason ?? null,
      ratePerSecond: input.ratePerSecond ?? null,
      limits: limitsChangeOf(input.redriveLimits),
      destination: input.destination ?? 'POLICY',
      sourceBridges: ctx.bridges?.list().map((b) => b.name) ?? [],
    }),
  );
}

builder.queryFields((t) => ({
  redrive: t.prismaField({
    type: 'Redrive',
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, args, ctx) => readRedrive(ctx.db, parseId(args.id), query),
  }),
  redrives: t.prismaField({
    type: ['Redrive'],
    description: `Redrives, newest first: \`first\` of them, 1 to ${MAX_REDRIVES_LISTED}.`,
    args: { statuses: t.arg({ type: [RedriveStatusEnum] }), first: t.arg.int({ defaultValue: 20 }) },
    resolve: (query, _root, args, ctx) => {
      const first = args.first ?? 20;
      if (first < 1 || first > MAX_REDRIVES_LISTED) throw badUserInput(`first must be between 1 and ${MAX_REDRIVES_LISTED}`, { argument: 'first' });
      return readRedrives(ctx.db, query, { statuses: args.statuses ?? null, first });
    },
  }),
}));

const move = (name: 'pause' | 'resume' | 'cancel', description: string) =>
  builder.mutationField(`${name}Redrive`, (t) =>
    t.prismaField({
      type: 'Redrive',
      authScopes: { operator: true },
      description,
      args: {
        id: t.arg.id({ required: true }),
        reason: t.arg.string({ description: 'Recorded in the redrive’s history (and, for a pause, as pausedReason).' }),
        ...(name === 'resume' ? { limits: t.arg({ type: RedriveLimitsInput, description: 'New limits from now on; absent fields keep their value.' }) } : {}),
      },
      errors: { types: [RedriveNotFoundError, InvalidTransitionError, ValidationError], directResult: true },
      resolve: async (query, _root, args, ctx) => {
        const id = parseId(args.id);
        const limits = limitsChangeOf((args as { limits?: LimitsArg }).limits);
        await limitsAsBadInput('limits', () => moveRedrive(ctx.db, id, name, { actor: actorOf(ctx), reason: args.reason, limits }));
        return readRedriveOrThrow(ctx.db, id, query);
      },
    }),
  );
move('pause', 'Pauses a RUNNING redrive after its current batch (pausedBy OPERATOR).');
move('resume', 'Resumes a PAUSED or FAILED redrive from where it stopped, optionally with new limits; the ramp starts again from its start rate and the guard from an empty window.');
move('cancel', 'Cancels a RUNNING, PAUSED or FAILED redrive; what was requeued stays requeued, the rest is never touched.');
