// Requeue entry point and throttled redrives: a requeue by filter above the configured threshold
// becomes a tracked redrive run in batches by src/workers/redriveRunner.ts.
import { InvalidTransitionError } from '../../domain/errors.ts';
import { RESULT_ID_SAMPLE, type Selection } from '../../domain/operatorActions.ts';
import { moveRedrive, RedriveNotFoundError, requeueOrStartRedrive, type RequeueOutcome } from '../../domain/redrives.ts';
import { DEFAULT_WRITE_CONFIG } from '../../domain/writeConfig.ts';
import { RedriveStatus } from '../../generated/prisma/enums.ts';
import { builder, type GraphQLContext } from './builder.ts';
import { parseId } from './ids.ts';
import { badUserInput } from './errors.ts';
import { MutationErrorRef } from './writeErrors.ts';

const MAX_REDRIVES_LISTED = 100;

const RedriveStatusEnum = builder.enumType(RedriveStatus, {
  name: 'RedriveStatus',
  description: 'RUNNING ⇄ PAUSED → CANCELLED; RUNNING → COMPLETED; RUNNING → FAILED when 5 batches in a row fail for a reason other than database trouble (see `error`; FAILED can be resumed or cancelled).',
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
    ratePerSecond: t.exposeInt('ratePerSecond'),
    resetAttempts: t.exposeBoolean('resetAttempts'),
    force: t.exposeBoolean('force'),
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
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true }),
  }),
});

export const RequeueOutcomeRef = builder.objectRef<RequeueOutcome>('RequeueResult').implement({
  description: 'What a requeue changed (or, for a dry run, would change), or the redrive that will.',
  fields: (t) => ({
    count: t.exposeInt('count', { description: 'Events requeued (for a redrive: selected, to be requeued by it).' }),
    ids: t.idList({ description: `The first ${RESULT_ID_SAMPLE} affected ids, ascending (empty for a redrive).`, resolve: (r) => r.ids.map(String) }),
    dryRun: t.exposeBoolean('dryRun', { description: 'True when nothing was written.' }),
    redrive: t.prismaField({
      type: 'Redrive',
      nullable: true,
      description: 'Set when the requeue was large enough to become a throttled redrive.',
      resolve: (query, r, _args, ctx) => (r.redriveId === null ? null : ctx.db.redrive.findUnique({ ...query, where: { id: r.redriveId } })),
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
}

export async function requeueOrRedrive(ctx: GraphQLContext, actor: string, input: RequeueArgs, selection: Selection): Promise<RequeueOutcome> {
  return requeueOrStartRedrive(ctx.db, actor, ctx.writeConfig ?? DEFAULT_WRITE_CONFIG, {
    selection,
    dryRun: input.dryRun ?? false,
    at: input.at ?? null,
    resetAttempts: input.resetAttempts ?? false,
    force: input.force ?? false,
    reason: input.reason ?? null,
    ratePerSecond: input.ratePerSecond ?? null,
  });
}

builder.queryFields((t) => ({
  redrive: t.prismaField({
    type: 'Redrive',
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, args, ctx) => ctx.db.redrive.findUnique({ ...query, where: { id: parseId(args.id) } }),
  }),
  redrives: t.prismaField({
    type: ['Redrive'],
    description: `Redrives, newest first: \`first\` of them, 1 to ${MAX_REDRIVES_LISTED}.`,
    args: { statuses: t.arg({ type: [RedriveStatusEnum] }), first: t.arg.int({ defaultValue: 20 }) },
    resolve: (query, _root, args, ctx) => {
      const first = args.first ?? 20;
      if (first < 1 || first > MAX_REDRIVES_LISTED) throw badUserInput(`first must be between 1 and ${MAX_REDRIVES_LISTED}`, { argument: 'first' });
      return ctx.db.redrive.findMany({
        ...query,
        where: args.statuses ? { status: { in: args.statuses } } : {},
        orderBy: { id: 'desc' },
        take: first,
      });
    },
  }),
}));

const move = (name: 'pause' | 'resume' | 'cancel', description: string) =>
  builder.mutationField(`${name}Redrive`, (t) =>
    t.prismaField({
      type: 'Redrive',
      authScopes: { operator: true },
      description,
      args: { id: t.arg.id({ required: true }) },
      errors: { types: [RedriveNotFoundError, InvalidTransitionError], directResult: true },
      resolve: async (query, _root, args, ctx) => {
        const id = parseId(args.id);
        await moveRedrive(ctx.db, id, name);
        return ctx.db.redrive.findUniqueOrThrow({ ...query, where: { id } });
      },
    }),
  );
move('pause', 'Pauses a RUNNING redrive after its current batch.');
move('resume', 'Resumes a PAUSED or FAILED redrive from where it stopped.');
move('cancel', 'Cancels a RUNNING, PAUSED or FAILED redrive; what was requeued stays requeued.');
