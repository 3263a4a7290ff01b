// Payload transforms: previewTransform, applyTransform, undoTransform, and the recorded transforms.
import type { Principal } from '../auth/principal.ts';
import { ConflictError, ValidationError } from '../../domain/errors.ts';
import { InvalidPatchError, MAX_PATCH_ADDED_BYTES, MAX_PATCH_OPERATIONS, parsePayloadPatch, type PayloadPatch } from '../../domain/payloadPatch.ts';
import {
  applyTransform,
  FAILURE_ID_SAMPLE,
  MAX_PREVIEW_SAMPLE,
  MAX_TRANSFORM_EVENTS,
  previewTransform,
  TransformNotApplicableError,
  TransformNotFoundError,
  TRANSFORM_BATCH,
  undoTransform,
  type TransformFailure,
  type TransformPreview,
} from '../../domain/payloadTransforms.ts';
import { parseFailures } from '../../domain/transformTally.ts';
import { SKIPPED_ID_SAMPLE } from '../../domain/transformBatches.ts';
import type { Transform } from '../../generated/prisma/client.ts';
import { PatchKind, TransformStatus } from '../../generated/prisma/enums.ts';
import { readTransform, readTransformOrThrow, readTransforms } from '../../reads/transforms.ts';
import { builder, type GraphQLContext } from './builder.ts';
import { DeadLetterFilterInput, parseDeadLetterFilter } from './deadLetterFilter.ts';
import { DeadLetterStatusEnum } from './enums.ts';
import { badUserInput } from './errors.ts';
import { parseId } from './ids.ts';
import { MutationErrorRef } from './writeErrors.ts';

const MAX_TRANSFORMS_LISTED = 100;

const TransformStatusEnum = builder.enumType(TransformStatus, {
  name: 'TransformStatus',
  description: 'PREPARING (its events are being recorded) → RUNNING → APPLIED (the runner applies it in batches); RUNNING | APPLIED | FAILED → UNDOING → UNDONE (once); ' +
    'PREPARING → FAILED when the request recording it died; RUNNING | UNDOING → FAILED when 5 batches in a row fail for a reason other than database trouble (see `error`; a FAILED transform can be undone).',
});
const PatchKindEnum = builder.enumType(PatchKind, { name: 'PatchKind', description: 'JSON_PATCH is RFC 6902; MERGE_PATCH is RFC 7396.' });

const TransformFailureRef = builder.objectRef<TransformFailure>('TransformFailure').implement({
  description: 'Events the patch does not apply to, for one reason.',
  fields: (t) => ({
    reason: t.exposeString('reason', { description: 'E.g. `operation 0 (remove /legacy): nothing at /legacy`, or which payload CHECK the result would break.' }),
    count: t.exposeInt('count'),
    ids: t.idList({ description: `The first ${FAILURE_ID_SAMPLE} of those events, ascending.`, resolve: (f) => f.ids.map(String) }),
  }),
});

builder.objectType(TransformNotFoundError, {
  name: 'TransformNotFoundError',
  description: 'No transform with this id (code NOT_FOUND).',
  interfaces: [MutationErrorRef],
  isTypeOf: (e) => e instanceof TransformNotFoundError,
  fields: (t) => ({ id: t.id({ resolve: (e) => e.id.toString() }) }),
});

builder.objectType(TransformNotApplicableError, {
  name: 'TransformNotApplicableError',
  description: 'The patch does not apply to some selected events, or a result would break the payload CHECKs; nothing was changed (code VALIDATION).',
  interfaces: [MutationErrorRef],
  isTypeOf: (e) => e instanceof TransformNotApplicableError,
  fields: (t) => ({
    failed: t.exposeInt('failed'),
    failures: t.field({ type: [TransformFailureRef], resolve: (e) => e.failures }),
  }),
});

const TransformStatusCountRef = builder.objectRef<TransformPreview['byStatus'][number]>('TransformStatusCount').implement({
  fields: (t) => ({
    status: t.field({ type: DeadLetterStatusEnum, resolve: (c) => c.status }),
    count: t.exposeInt('count'),
  }),
});

const TransformPreviewRef = builder.objectRef<TransformPreview>('TransformPreview').implement({
  description: 'What a transform would do now, read from one snapshot. matched = changed + unchanged + failed.',
  fields: (t) => ({
    matched: t.exposeInt('matched', { description: 'Events the filter selects (PROCESSING events are never transformed).' }),
    changed: t.exposeInt('changed', { description: 'Events whose payload the patch changes.' }),
    unchanged: t.exposeInt('unchanged', { description: 'Events the patch applies to without changing anything.' }),
    failed: t.exposeInt('failed', { description: 'Events the patch does not apply to (see failures).' }),
    failures: t.field({ type: [TransformFailureRef], description: 'Failed events grouped by reason, most frequent first.', resolve: (p) => p.failures }),
    byStatus: t.field({
      type: [TransformStatusCountRef],
      description: 'Matched events per status, most first (ties by status).',
      resolve: (p) => p.byStatus,
    }),
    finished: t.exposeInt('finished', {
      description: 'Matched events already SUCCEEDED, RESOLVED or DISCARDED: the transform rewrites their stored payload too (one fixed by hand before it was delivered, say), though nothing redelivers them. Narrow the filter by status to leave them alone.',
    }),
    samples: t.field({
      type: [builder.objectRef<TransformPreview['samples'][number]>('TransformSample').implement({
        description: 'One changed event: its payload before and after.',
        fields: (s) => ({
          id: s.id({ resolve: (x) => x.id.toString() }),
          status: s.field({ type: DeadLetterStatusEnum, description: 'Its status now: SUCCEEDED, RESOLVED or DISCARDED ones were already finished.', resolve: (x) => x.status }),
          before: s.expose('before', { type: 'JSON' }),
          after: s.expose('after', { type: 'JSON' }),
        }),
      })],
      description: 'The first changed events, ascending by id.',
      resolve: (p) => p.samples,
    }),
  }),
});

builder.prismaObject('Transform', {
  description: 'A payload transform: one patch applied to every event a filter selected, in batches, undoable once.',
  fields: (t) => ({
    id: t.id({ resolve: (x) => x.id.toString() }),
    status: t.expose('status', { type: TransformStatusEnum }),
    kind: t.expose('kind', { type: PatchKindEnum }),
    patch: t.expose('patch', { type: 'JSON', description: 'The patch document as given.' }),
    filter: t.expose('filter', { type: 'JSON', description: 'The filter as given.' }),
    requeue: t.exposeBoolean('requeue'),
    skipFailing: t.exposeBoolean('skipFailing'),
    reason: t.exposeString('reason', { nullable: true }),
    createdBy: t.exposeString('createdBy'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    appliedAt: t.expose('appliedAt', { type: 'DateTime', nullable: true, description: 'When its last batch committed (null until APPLIED).' }),
    matched: t.exposeInt('matched', { description: 'Its targets: the events the filter selected when the validation read them. matched = processed when it is APPLIED.' }),
    processed: t.exposeInt('processed', { description: 'Targets handled so far: changed + unchanged + failed + skipped.' }),
    progress: t.float({ description: 'processed / matched, from 0 to 1.', resolve: (x) => (x.matched === 0 ? 1 : x.processed / x.matched) }),
    changed: t.exposeInt('changed'),
    unchanged: t.exposeInt('unchanged'),
    failed: t.exposeInt('failed', { description: 'Events left as they were because the patch did not apply to them (skipFailing only; otherwise nothing is applied).' }),
    failures: t.field({ type: [TransformFailureRef], description: 'Failed events by reason, most frequent first.', resolve: (x) => parseFailures(x.failures) }),
    skipped: t.exposeInt('skipped', { description: 'Targets left alone at their batch: their payload changed since the validation read it, they were PROCESSING, or deleted.' }),
    skippedIds: t.idList({ description: `The first ${SKIPPED_ID_SAMPLE} skipped events.`, resolve: (x) => x.skippedIds.map(String) }),
    error: t.exposeString('error', { nullable: true, description: 'Why it is FAILED.' }),
    undoneAt: t.expose('undoneAt', { type: 'DateTime', nullable: true }),
    undoneBy: t.exposeString('undoneBy', { nullable: true }),
    undoReason: t.exposeString('undoReason', { nullable: true }),
    undoProcessed: t.exposeInt('undoProcessed', { description: 'Changed events the undo has handled so far: restored + keptEdited + keptMissing.' }),
    restored: t.exposeInt('restored', { description: 'Payloads the undo put back.' }),
    keptEdited: t.exposeInt('keptEdited', { description: 'Events the undo left alone because their payload was edited after the transform.' }),
    keptEditedIds: t.idList({ description: `The first ${SKIPPED_ID_SAMPLE} of those.`, resolve: (x) => x.keptEditedIds.map(String) }),
    keptMissing: t.exposeInt('keptMissing', { description: 'Events the undo could not restore because they were deleted.' }),
    keptMissingIds: t.idList({ description: `The first ${SKIPPED_ID_SAMPLE} of those.`, resolve: (x) => x.keptMissingIds.map(String) }),
  }),
});

const UndoTransformResultRef = builder.objectRef<Transform>('UndoTransformResult').implement({
  description: `What an undo restored and left alone; final when transform.status is UNDONE (an undo of at most ${TRANSFORM_BATCH} changed events is), else so far.`,
  fields: (t) => ({
    transform: t.prismaField({ type: 'Transform', resolve: (query, r, _a, ctx) => readTransformOrThrow(ctx.db, r.id, query) }),
    restored: t.exposeInt('restored'),
    edited: t.exposeInt('keptEdited', { description: 'Events left alone: their payload changed after the transform.' }),
    editedIds: t.idList({ description: `The first ${SKIPPED_ID_SAMPLE} of those, ascending.`, resolve: (r) => r.keptEditedIds.map(String) }),
    missing: t.exposeInt('keptMissing', { description: 'Events deleted since the transform.' }),
    missingIds: t.idList({ resolve: (r) => r.keptMissingIds.map(String) }),
  }),
});

const patchFields = (t: Parameters<Parameters<typeof builder.inputType>[1]['fields']>[0]) => ({
  filter: t.field({ type: DeadLetterFilterInput, required: true, description: 'The events to transform (a group: `{ groupId }`). Must set at least one field.' }),
  patch: t.field({ type: 'JSON', description: `A JSON Patch (RFC 6902): a list of at most ${MAX_PATCH_OPERATIONS} operations, whose values and copies add at most ${MAX_PATCH_ADDED_BYTES} bytes of JSON to a payload. Exactly one of patch and mergePatch.` }),
  mergePatch: t.field({ type: 'JSON', description: 'A JSON Merge Patch (RFC 7396): null deletes a key.' }),
});

const PreviewTransformInput = builder.inputType('PreviewTransformInput', {
  fields: (t) => ({
    ...patchFields(t),
    sample: t.int({ defaultValue: 5, description: `How many before/after pairs to return, 0 to ${MAX_PREVIEW_SAMPLE}.` }),
  }),
});

const ApplyTransformInput = builder.inputType('ApplyTransformInput', {
  description: `Applies to at most ${MAX_TRANSFORM_EVENTS} events, in batches of ${TRANSFORM_BATCH} (one transaction each) after a validation pass over all of them.`,
  fields: (t) => ({
    ...patchFields(t),
    reason: t.string(),
    requeue: t.boolean({ defaultValue: false, description: 'Also make changed PENDING and EXHAUSTED events due now (batch by batch).' }),
    skipFailing: t.boolean({ defaultValue: false, description: 'Change the events the patch applies to and leave the rest. By default one failure changes nothing. A result that would break the payload CHECKs always changes nothing.' }),
  }),
});

const UndoTransformInput = builder.inputType('UndoTransformInput', {
  fields: (t) => ({ id: t.id({ required: true }), reason: t.string() }),
});

/** The patch document, or BAD_USER_INPUT naming the field and the operation index. */
function parsePatchArg(input: { patch?: unknown; mergePatch?: unknown }): PayloadPatch {
  try {
    return parsePayloadPatch(input);
  } catch (error) {
    if (error instanceof InvalidPatchError) throw badUserInput(error.message, { field: error.field, index: error.index });
    throw error;
  }
}

const actor = (ctx: GraphQLContext): string => (ctx.principal as Principal).name;

builder.queryFields((t) => ({
  previewTransform: t.field({
    type: TransformPreviewRef,
    authScopes: { viewer: true },
    description: 'What applyTransform would do with the same input: exact counts, failures by reason, and before/after samples. Writes nothing.',
    args: { input: t.arg({ type: PreviewTransformInput, required: true }) },
    errors: { types: [ValidationError], directResult: true },
    resolve: (_root, { input }, ctx) =>
      previewTransform(ctx.db, { filter: parseDeadLetterFilter(input.filter), patch: parsePatchArg(input), sample: input.sample ?? 5 }),
  }),
  transform: t.prismaField({
    type: 'Transform',
    nullable: true,
    authScopes: { viewer: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, { id }, ctx) => readTransform(ctx.db, parseId(id), query),
  }),
  transforms: t.prismaField({
    type: ['Transform'],
    authScopes: { viewer: true },
    description: `Recorded transforms, newest first (at most ${MAX_TRANSFORMS_LISTED}).`,
    args: { first: t.arg.int({ defaultValue: 20 }) },
    resolve: (query, _root, { first }, ctx) => {
      const take = first ?? 20;
      if (take < 1 || take > MAX_TRANSFORMS_LISTED) throw badUserInput(`first must be from 1 to ${MAX_TRANSFORMS_LISTED}`, { field: 'first' });
      return readTransforms(ctx.db, query, take);
    },
  }),
}));

builder.mutationFields((t) => ({
  applyTransform: t.prismaField({
    type: 'Transform',
    authScopes: { operator: true },
    description:
      'Checks the patch on every selected event (all or nothing by default: any failure changes nothing and is reported), then records the transform and applies it in batches, ' +
      `resumably. One of at most ${TRANSFORM_BATCH} events is APPLIED when this returns; a larger one is RUNNING: follow processed / matched on transform(id). ` +
      'Each changed event gets a PAYLOAD_TRANSFORMED history entry; events edited after the validation read them are skipped and reported, never overwritten.',
    args: { input: t.arg({ type: ApplyTransformInput, required: true }) },
    errors: { types: [ValidationError, TransformNotApplicableError], directResult: true },
    resolve: async (query, _root, { input }, ctx) => {
      const id = await applyTransform(ctx.db, actor(ctx), {
        filter: parseDeadLetterFilter(input.filter),
        patch: parsePatchArg(input),
        reason: input.reason ?? null,
        requeue: input.requeue ?? false,
        skipFailing: input.skipFailing ?? false,
      });
      return readTransformOrThrow(ctx.db, id, query);
    },
  }),
  undoTransform: t.field({
    type: UndoTransformResultRef,
    authScopes: { operator: true },
    description:
      'Restores every payload the transform changed (the same jsonb), except those edited since, which are reported. Each restored event gets a TRANSFORM_UNDONE history entry. ' +
      `Undoing a RUNNING transform stops it and undoes what it applied. An undo of at most ${TRANSFORM_BATCH} changed events is UNDONE when this returns; a larger one is UNDOING, in batches.`,
    args: { input: t.arg({ type: UndoTransformInput, required: true }) },
    errors: { types: [ValidationError, TransformNotFoundError, ConflictError], directResult: true },
    resolve: async (_root, { input }, ctx) => {
      const id = await undoTransform(ctx.db, actor(ctx), { id: parseId(input.id), reason: input.reason ?? null });
      return readTransformOrThrow(ctx.db, id);
    },
  }),
}));
