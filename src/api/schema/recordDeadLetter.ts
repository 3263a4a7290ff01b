// Producer mutations: recordDeadLetter and recordDeadLetters (≤ 1,000 per call, one statement).
import { ValidationError } from '../../domain/errors.ts';
import { recordDeadLetters, type RecordOutcome } from '../../domain/recordDeadLetters.ts';
import { MAX_BATCH, type RecordDeadLetterInput } from '../../domain/recordInput.ts';
import { DEFAULT_WRITE_CONFIG } from '../../domain/writeConfig.ts';
import { readDeadLetterOrThrow } from '../../reads/deadLetters.ts';
import { builder } from './builder.ts';
import { ErrorKindEnum } from './enums.ts';

const RecordedDeadLetterRef = builder.objectRef<RecordOutcome>('RecordedDeadLetter').implement({
  description: 'The outcome for one input: stored now, or already stored under the same dedupe key.',
  fields: (t) => ({
    id: t.id({ resolve: (r) => r.id.toString() }),
    created: t.exposeBoolean('created', { description: 'False when the dedupe key was already known; nothing was stored.' }),
    deadLetter: t.prismaField({
      type: 'DeadLetter',
      resolve: (query, r, _args, ctx) => readDeadLetterOrThrow(ctx.db, r.id, query),
    }),
  }),
});

const RecordedDeadLettersRef = builder.objectRef<RecordOutcome[]>('RecordedDeadLetters').implement({
  fields: (t) => ({
    results: t.field({ type: [RecordedDeadLetterRef], description: 'One per input, in input order.', resolve: (r) => r }),
    createdCount: t.int({ resolve: (r) => r.filter((x) => x.created).length }),
    duplicateCount: t.int({ resolve: (r) => r.filter((x) => !x.created).length }),
  }),
});

const DeadLetterErrorInput = builder.inputType('DeadLetterErrorInput', {
  fields: (t) => ({
    kind: t.field({ type: ErrorKindEnum, description: 'Default UNKNOWN.' }),
    message: t.string({ description: 'Default empty.' }),
    stack: t.string(),
  }),
});

export const RecordDeadLetterInputRef = builder.inputType('RecordDeadLetterInput', {
  description: 'A failed event. Omitted fields take the same defaults as a plain SQL INSERT.',
  fields: (t) => ({
    eventType: t.string({ required: true }),
    payload: t.field({ type: 'JSON', required: true, description: 'Any JSON, at most 256 KiB.' }),
    error: t.field({ type: DeadLetterErrorInput }),
    queue: t.string({ description: 'Default "default".' }),
    source: t.string({ description: 'Which system dead-lettered it. Default "unknown".' }),
    orderingKey: t.string(),
    orderingSeq: t.string({ description: 'Sequence within the ordering key: a decimal 64-bit integer.' }),
    headers: t.field({ type: 'JSON', description: 'A JSON object: topic, partition, offset, trace ids… At most 64 KiB.' }),
    origin: t.field({ type: 'JSON', description: 'Source coordinates: a JSON object with a string `kind` (`amqp`, `nats`, `redis`…), at most 8 KiB. Shapes: docs/brokers.md.' }),
    occurredAt: t.field({ type: 'DateTime', description: 'When the original failure happened. Default now.' }),
    dedupeKey: t.string({ description: 'Ingest is idempotent on it: a second input with the same key stores nothing.' }),
    maxAttempts: t.int({ description: 'Overrides the retry policy’s max attempts for this event (1–1000).' }),
    firstRetryAt: t.field({ type: 'DateTime', description: 'When the first retry is due. Default now.' }),
  }),
});

type Input = typeof RecordDeadLetterInputRef.$inferInput;

function toDomain(input: Input, index: number | null): RecordDeadLetterInput {
  let orderingSeq: bigint | null = null;
  if (input.orderingSeq !== null && input.orderingSeq !== undefined) {
    if (!/^(0|[1-9][0-9]{0,18})$/.test(input.orderingSeq)) throw new ValidationError('orderingSeq', 'must be a decimal non-negative 64-bit integer', index);
    orderingSeq = BigInt(input.orderingSeq);
  }
  return {
    eventType: input.eventType,
    payload: input.payload,
    errorKind: input.error?.kind ?? null,
    errorMessage: input.error?.message ?? null,
    errorStack: input.error?.stack ?? null,
    queue: input.queue,
    source: input.source,
    orderingKey: input.orderingKey,
    orderingSeq,
    headers: input.headers,
    origin: input.origin as RecordDeadLetterInput['origin'],
    occurredAt: input.occurredAt,
    dedupeKey: input.dedupeKey,
    maxAttempts: input.maxAttempts,
    nextAttemptAt: input.firstRetryAt,
  };
}

builder.mutationFields((t) => ({
  recordDeadLetter: t.field({
    type: RecordedDeadLetterRef,
    authScopes: { operator: true },
    description: 'Dead-letters one failed event (idempotent on dedupeKey).',
    args: { input: t.arg({ type: RecordDeadLetterInputRef, required: true }) },
    errors: { types: [ValidationError], directResult: true },
    resolve: async (_root, { input }, ctx) => {
      const [outcome] = await recordDeadLetters(ctx.db, ctx.writeConfig ?? DEFAULT_WRITE_CONFIG, ctx.principal!.name, [toDomain(input, null)]);
      return outcome!;
    },
  }),
  recordDeadLetters: t.field({
    type: RecordedDeadLettersRef,
    authScopes: { operator: true },
    description: `Dead-letters up to ${MAX_BATCH} failed events in one database round trip. One invalid input refuses the whole batch.`,
    args: { inputs: t.arg({ type: [RecordDeadLetterInputRef], required: true }) },
    errors: { types: [ValidationError], directResult: true },
    resolve: async (_root, { inputs }, ctx) => {
      if (inputs.length > MAX_BATCH) throw new ValidationError('inputs', `must hold at most ${MAX_BATCH} dead letters, got ${inputs.length}`);
      return recordDeadLetters(ctx.db, ctx.writeConfig ?? DEFAULT_WRITE_CONFIG, ctx.principal!.name, inputs.map((input, i) => toDomain(input, i)));
    },
  }),
}));
