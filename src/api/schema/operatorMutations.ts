// Operator mutations. Bulk ones take exactly one of `ids` or `filter`, and a `dryRun`.
import type { Principal } from '../auth/principal.ts';
import { ConflictError, DeadLetterNotFoundError, InvalidTransitionError, NoSourceError, ValidationError } from '../../domain/errors.ts';
import { addNote, close, editPayload, MAX_BULK_IDS, MAX_REASON_LENGTH, remove, RESULT_ID_SAMPLE, type BulkResult, type Selection } from '../../domain/operatorActions.ts';
import { readDeadLetterOrThrow } from '../../reads/deadLetters.ts';
import { builder, type GraphQLContext } from './builder.ts';
import { DeadLetterFilterInput, parseDeadLetterFilter } from './deadLetterFilter.ts';
import { parseId } from './ids.ts';
import { RedriveLimitsInput, RequeueDestinationEnum, requeueOrRedrive, RequeueOutcomeRef } from './redrive.ts';

const ERRORS = [ValidationError, DeadLetterNotFoundError, InvalidTransitionError, ConflictError];
const REQUEUE_ERRORS = [...ERRORS, NoSourceError];

export const BulkChangeRef = builder.objectRef<BulkResult>('BulkChange').implement({
  description: 'What a bulk mutation changed (or, for a dry run, would change).',
  fields: (t) => ({
    count: t.exposeInt('count'),
    ids: t.idList({ description: `The first ${RESULT_ID_SAMPLE} affected ids, ascending.`, resolve: (r) => r.ids.map(String) }),
    dryRun: t.exposeBoolean('dryRun', { description: 'True when nothing was written.' }),
  }),
});

const selectionFields = (t: Parameters<Parameters<typeof builder.inputType>[1]['fields']>[0]) => ({
  ids: t.idList({ description: `Explicit ids, at most ${MAX_BULK_IDS}: all change or none (NOT_FOUND / CONFLICT).` }),
  expectedVersions: t.intList({
    description: 'With ids: the version of each id as the caller last saw it (same order). Any mismatch refuses the whole change with CONFLICT.',
  }),
  filter: t.field({ type: DeadLetterFilterInput, description: 'Everything matching now that the action is legal for.' }),
  dryRun: t.boolean({ defaultValue: false, description: 'Report what would change; write nothing.' }),
});

export const RequeueDeadLettersInput = builder.inputType('RequeueDeadLettersInput', {
  description: 'Exactly one of ids or filter. PROCESSING events are never touched.',
  fields: (t) => ({
    ...selectionFields(t),
    at: t.field({ type: 'DateTime', description: 'When the retry is due. Default now.' }),
    resetAttempts: t.boolean({ defaultValue: false }),
    force: t.boolean({ defaultValue: false, description: 'Also requeue SUCCEEDED, RESOLVED and DISCARDED events.' }),
    reason: t.string(),
    destination: t.field({ type: RequeueDestinationEnum, defaultValue: 'POLICY', description: 'POLICY (default) or SOURCE: back to each event’s origin.' }),
    ratePerSecond: t.int({
      description: 'With filter only: requeue through a throttled redrive at this many events per second, whatever the count. ' +
        'Requeues by filter above the configured threshold always become redrives, at the configured default rate unless this is set.',
    }),
    redriveLimits: t.field({
      type: RedriveLimitsInput,
      description: 'With filter only: run as a throttled redrive with these limits (a ramp, a failure guard), whatever the count.',
    }),
  }),
});

const CloseInput = (name: string, verb: string) =>
  builder.inputType(name, {
    description: `Exactly one of ids or filter. Only PENDING and EXHAUSTED events can be ${verb}.`,
    fields: (t) => ({ ...selectionFields(t), reason: t.string({ required: true, description: `Required, at most ${MAX_REASON_LENGTH} characters.` }) }),
  });
const ResolveInput = CloseInput('ResolveDeadLettersInput', 'resolved');
const DiscardInput = CloseInput('DiscardDeadLettersInput', 'discarded');
const DeleteInput = builder.inputType('DeleteDeadLettersInput', {
  description: 'Exactly one of ids or filter. PROCESSING events are never deleted.',
  fields: (t) => ({ ...selectionFields(t), reason: t.string() }),
});
const EditPayloadInput = builder.inputType('EditDeadLetterPayloadInput', {
  fields: (t) => ({
    id: t.id({ required: true }),
    payload: t.field({ type: 'JSON', required: true }),
    expectedVersion: t.int({ description: 'Refuse with CONFLICT unless the event is still at this version.' }),
    requeue: t.boolean({ defaultValue: false, description: 'Edit-and-retry: also make it PENDING, due now.' }),
    reason: t.string(),
  }),
});
const NoteInput = builder.inputType('AddDeadLetterNoteInput', {
  fields: (t) => ({ id: t.id({ required: true }), note: t.string({ required: true }) }),
});

export const NoteRef = builder.objectRef<{ id: bigint; deadLetterId: bigint; note: string; actor: string }>('DeadLetterNote').implement({
  fields: (t) => ({
    id: t.id({ resolve: (n) => n.id.toString() }),
    deadLetterId: t.id({ resolve: (n) => n.deadLetterId.toString() }),
    note: t.exposeString('note'),
    actor: t.exposeString('actor'),
  }),
});

/** Exactly one of ids or filter, parsed. */
export function parseSelection(input: { ids?: readonly (string | number)[] | null; expectedVersions?: readonly number[] | null; filter?: unknown }): Selection {
  const hasIds = input.ids !== null && input.ids !== undefined;
  const hasFilter = input.filter !== null && input.filter !== undefined;
  if (!hasIds && input.expectedVersions) throw new ValidationError('expectedVersions', 'only goes with ids');
  if (hasIds === hasFilter) throw new ValidationError(hasIds ? 'filter' : 'ids', 'give exactly one of ids or filter');
  if (hasIds) {
    if (input.ids!.length > MAX_BULK_IDS) throw new ValidationError('ids', `must name at most ${MAX_BULK_IDS} dead letters; use a filter for more`);
    const ids = input.ids!.map((id) => parseId(id, 'ids'));
    if (input.expectedVersions && input.expectedVersions.length !== ids.length) {
      throw new ValidationError('expectedVersions', 'must hold one version per id');
    }
    return { ids, expectedVersions: input.expectedVersions ? [...input.expectedVersions] : null };
  }
  return { filter: parseDeadLetterFilter(input.filter as Parameters<typeof parseDeadLetterFilter>[0]) };
}

const actor = (ctx: GraphQLContext): string => (ctx.principal as Principal).name;

builder.mutationFields((t) => ({
  requeueDeadLetters: t.field({
    type: RequeueOutcomeRef,
    authScopes: { operator: true },
    description: 'Sends events back for another delivery. A requeue by filter above the redrive threshold becomes a throttled redrive.',
    args: { input: t.arg({ type: RequeueDeadLettersInput, required: true }) },
    errors: { types: REQUEUE_ERRORS, directResult: true },
    resolve: (_root, { input }, ctx) => requeueOrRedrive(ctx, actor(ctx), input, parseSelection(input)),
  }),
  resolveDeadLetters: t.field({
    type: BulkChangeRef,
    authScopes: { operator: true },
    description: 'Marks events RESOLVED (handled elsewhere).',
    args: { input: t.arg({ type: ResolveInput, required: true }) },
    errors: { types: ERRORS, directResult: true },
    resolve: (_root, { input }, ctx) =>
      close(ctx.db, actor(ctx), 'RESOLVED', { selection: parseSelection(input), dryRun: input.dryRun ?? false, reason: input.reason }),
  }),
  discardDeadLetters: t.field({
    type: BulkChangeRef,
    authScopes: { operator: true },
    description: 'Marks events DISCARDED (dropped on purpose).',
    args: { input: t.arg({ type: DiscardInput, required: true }) },
    errors: { types: ERRORS, directResult: true },
    resolve: (_root, { input }, ctx) =>
      close(ctx.db, actor(ctx), 'DISCARDED', { selection: parseSelection(input), dryRun: input.dryRun ?? false, reason: input.reason }),
  }),
  deleteDeadLetters: t.field({
    type: BulkChangeRef,
    authScopes: { admin: true },
    description: 'Deletes events for good; each deleted row is kept in its DELETED history entry.',
    args: { input: t.arg({ type: DeleteInput, required: true }) },
    errors: { types: ERRORS, directResult: true },
    resolve: (_root, { input }, ctx) =>
      remove(ctx.db, actor(ctx), { selection: parseSelection(input), dryRun: input.dryRun ?? false, reason: input.reason ?? null }),
  }),
  editDeadLetterPayload: t.prismaField({
    type: 'DeadLetter',
    authScopes: { operator: true },
    description: 'Replaces an event’s payload; history keeps the previous one, so the edit can be undone.',
    args: { input: t.arg({ type: EditPayloadInput, required: true }) },
    errors: { types: ERRORS, directResult: true },
    resolve: async (query, _root, { input }, ctx) => {
      const id = parseId(input.id);
      await editPayload(ctx.db, actor(ctx), {
        id, payload: input.payload, expectedVersion: input.expectedVersion ?? null, requeue: input.requeue ?? false, reason: input.reason ?? null,
      });
      return readDeadLetterOrThrow(ctx.db, id, query);
    },
  }),
  addDeadLetterNote: t.field({
    type: NoteRef,
    authScopes: { operator: true },
    description: 'Adds a note to an event’s history.',
    args: { input: t.arg({ type: NoteInput, required: true }) },
    errors: { types: [ValidationError, DeadLetterNotFoundError], directResult: true },
    resolve: async (_root, { input }, ctx) => {
      const deadLetterId = parseId(input.id);
      const id = await addNote(ctx.db, actor(ctx), { id: deadLetterId, note: input.note });
      return { id, deadLetterId, note: input.note.trim(), actor: actor(ctx) };
    },
  }),
}));
