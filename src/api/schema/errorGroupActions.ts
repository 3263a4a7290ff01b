// Group actions: requeue, resolve or discard every member of an error group. Each is the bulk
// mutation of the same name with `filter: { groupId }` (plus any narrower filter given), so it has
// the same dry run, eligibility rules and history, and a large requeue becomes a throttled redrive.
import type { Principal } from '../auth/principal.ts';
import { ConflictError, ErrorGroupNotFoundError, InvalidTransitionError, NoSourceError, ValidationError } from '../../domain/errors.ts';
import { errorGroupMembers } from '../../domain/errorGroups.ts';
import { close, MAX_REASON_LENGTH } from '../../domain/operatorActions.ts';
import { builder, type GraphQLContext } from './builder.ts';
import { DeadLetterFilterInput, parseDeadLetterFilter } from './deadLetterFilter.ts';
import { parseId } from './ids.ts';
import { BulkChangeRef } from './operatorMutations.ts';
import { RequeueDestinationEnum, requeueOrRedrive, RequeueOutcomeRef } from './redrive.ts';

const ERRORS = [ValidationError, ErrorGroupNotFoundError, InvalidTransitionError, ConflictError];
const REQUEUE_ERRORS = [...ERRORS, NoSourceError];

const memberFields = (t: Parameters<Parameters<typeof builder.inputType>[1]['fields']>[0]) => ({
  id: t.id({ required: true, description: 'The error group.' }),
  filter: t.field({ type: DeadLetterFilterInput, description: 'Narrows the members further (its own groupId, if any, is replaced).' }),
  dryRun: t.boolean({ defaultValue: false, description: 'Report what would change; write nothing.' }),
});

const RequeueMembersInput = builder.inputType('RequeueErrorGroupMembersInput', {
  description: 'Requeues the group’s PENDING and EXHAUSTED members (all but PROCESSING with force), as requeueDeadLetters does by filter.',
  fields: (t) => ({
    ...memberFields(t),
    resetAttempts: t.boolean({ defaultValue: false }),
    force: t.boolean({ defaultValue: false, description: 'Also requeue SUCCEEDED, RESOLVED and DISCARDED members.' }),
    reason: t.string(),
    destination: t.field({ type: RequeueDestinationEnum, defaultValue: 'POLICY', description: 'POLICY (default) or SOURCE: back to each member’s origin.' }),
    ratePerSecond: t.int({ description: 'Requeue through a throttled redrive at this many events per second, whatever the count. Above the redrive threshold a redrive is always used.' }),
  }),
});

const CloseMembersInput = (name: string, verb: string) =>
  builder.inputType(name, {
    description: `The group’s PENDING and EXHAUSTED members are ${verb}.`,
    fields: (t) => ({ ...memberFields(t), reason: t.string({ required: true, description: `Required, at most ${MAX_REASON_LENGTH} characters.` }) }),
  });
const ResolveMembersInput = CloseMembersInput('ResolveErrorGroupMembersInput', 'resolved');
const DiscardMembersInput = CloseMembersInput('DiscardErrorGroupMembersInput', 'discarded');

const actor = (ctx: GraphQLContext): string => (ctx.principal as Principal).name;

/** The members' filter: NOT_FOUND for an unknown group, before anything is counted or written. */
async function membersOf(ctx: GraphQLContext, input: { id: string; filter?: Parameters<typeof parseDeadLetterFilter>[0] }) {
  return errorGroupMembers(ctx.db, parseId(input.id), parseDeadLetterFilter(input.filter));
}

builder.mutationFields((t) => ({
  requeueErrorGroupMembers: t.field({
    type: RequeueOutcomeRef,
    authScopes: { operator: true },
    description: 'requeueDeadLetters for every member of the group: the same dry run, and a throttled redrive above the redrive threshold. The group reopens (not as a regression) once a requeued member is folded in.',
    args: { input: t.arg({ type: RequeueMembersInput, required: true }) },
    errors: { types: REQUEUE_ERRORS, directResult: true },
    resolve: async (_root, { input }, ctx) => requeueOrRedrive(ctx, actor(ctx), input, { filter: await membersOf(ctx, input) }),
  }),
  resolveErrorGroupMembers: t.field({
    type: BulkChangeRef,
    authScopes: { operator: true },
    description: 'resolveDeadLetters for every member of the group. With no unresolved member left, the group resolves itself.',
    args: { input: t.arg({ type: ResolveMembersInput, required: true }) },
    errors: { types: ERRORS, directResult: true },
    resolve: async (_root, { input }, ctx) =>
      close(ctx.db, actor(ctx), 'RESOLVED', { selection: { filter: await membersOf(ctx, input) }, dryRun: input.dryRun ?? false, reason: input.reason }),
  }),
  discardErrorGroupMembers: t.field({
    type: BulkChangeRef,
    authScopes: { operator: true },
    description: 'discardDeadLetters for every member of the group. With no unresolved member left, the group resolves itself.',
    args: { input: t.arg({ type: DiscardMembersInput, required: true }) },
    errors: { types: ERRORS, directResult: true },
    resolve: async (_root, { input }, ctx) =>
      close(ctx.db, actor(ctx), 'DISCARDED', { selection: { filter: await membersOf(ctx, input) }, dryRun: input.dryRun ?? false, reason: input.reason }),
  }),
}));
