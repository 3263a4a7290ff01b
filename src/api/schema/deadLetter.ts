import { OMITTED_KEY } from '../../domain/attemptDetails.ts';
import { readDeadLetter } from '../../reads/deadLetters.ts';
import { builder } from './builder.ts';
import { exactJson } from './exactJson.ts';
import { AttemptOutcomeEnum, DeadLetterStatusEnum, DeliveryFailureKindEnum, ErrorKindEnum, PermanentReasonEnum } from './enums.ts';
import { parseId } from './ids.ts';

export const DeadLetterErrorRef = builder
  .objectRef<{ kind: string; message: string; stack: string | null }>('DeadLetterError')
  .implement({
    description: 'The failure that put the event here.',
    fields: (t) => ({
      kind: t.field({ type: ErrorKindEnum, resolve: (e) => e.kind as never }),
      message: t.exposeString('message'),
      stack: t.exposeString('stack', { nullable: true }),
    }),
  });

const HttpHeaderRef = builder.objectRef<{ name: string; value: string }>('HttpHeader').implement({
  description: 'One header of an attempt’s request or response, as stored (names lower-case, secret values `[redacted]`, long values cut with `…`).',
  fields: (t) => ({ name: t.exposeString('name'), value: t.exposeString('value') }),
});

function headerList(headers: unknown): { name: string; value: string }[] | null {
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) return null;
  // jsonb keeps keys in its own order: by name here, the `…` entry (headers left out) last.
  return Object.entries(headers as Record<string, unknown>)
    .map(([name, value]) => ({ name, value: String(value) }))
    .sort((a, b) => Number(a.name === OMITTED_KEY) - Number(b.name === OMITTED_KEY) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export const DeliveryAttemptRef = builder.prismaObject('DeliveryAttempt', {
  description: 'One try at re-delivering a dead letter.',
  fields: (t) => ({
    id: t.id({ resolve: (a) => a.id.toString() }),
    attemptNumber: t.exposeInt('attemptNumber'),
    workerId: t.exposeString('workerId'),
    startedAt: t.expose('startedAt', { type: 'DateTime' }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime' }),
    durationMs: t.exposeInt('durationMs'),
    outcome: t.expose('outcome', { type: AttemptOutcomeEnum }),
    statusCode: t.exposeInt('statusCode', { nullable: true }),
    errorMessage: t.exposeString('errorMessage', { nullable: true }),
    responseBody: t.exposeString('responseBody', { nullable: true, description: 'The start of the target’s response: its first 2,048 bytes of UTF-8.' }),
    responseBodyTruncated: t.exposeBoolean('responseBodyTruncated', { nullable: true, description: 'The response body was longer than `responseBody` (null on attempts recorded before this was kept).' }),
    responseHeaders: t.field({
      type: [HttpHeaderRef], nullable: true,
      description: 'The response’s headers by name, secrets redacted, at most 2,048 bytes in all; a last `…` entry counts those left out. Null when nothing answered.',
      resolve: (a) => headerList(a.responseHeaders),
    }),
    failureKind: t.expose('failureKind', { type: DeliveryFailureKindEnum, nullable: true, description: 'Why it failed; null on a success, or when unknown.' }),
    permanentReason: t.expose('permanentReason', {
      type: PermanentReasonEnum, nullable: true,
      description: 'Set on the attempt after which the event went EXHAUSTED: the rule that stopped the retries. Null on every other attempt (a failure that was retried, a success).',
    }),
    target: t.exposeString('target', { nullable: true, description: 'Where it was sent: the target’s kind and host only (never a URL’s path or a credential).' }),
    requestHeaders: t.field({
      type: [HttpHeaderRef], nullable: true,
      description: 'The headers Lazarus sent, secrets (signatures, authorization, keys, cookies) shown as `[redacted]`, at most 1,024 bytes in all.',
      resolve: (a) => headerList(a.requestHeaders),
    }),
    requestBodyBytes: t.exposeInt('requestBodyBytes', { nullable: true, description: 'The size of the body sent, in bytes.' }),
    requestBodySha256: t.exposeString('requestBodySha256', { nullable: true, description: 'Hex SHA-256 of the body sent: equal hashes mean the same bytes went out.' }),
  }),
});

export const DeadLetterRef = builder.prismaObject('DeadLetter', {
  description: 'An event that failed in its pipeline and was dead-lettered here.',
  fields: (t) => ({
    id: t.id({ description: 'Decimal string of a 64-bit id.', resolve: (d) => d.id.toString() }),
    eventType: t.exposeString('eventType'),
    queue: t.exposeString('queue'),
    source: t.exposeString('source', { description: 'The system that dead-lettered the event.' }),
    orderingKey: t.exposeString('orderingKey', { nullable: true }),
    orderingSeq: t.string({ nullable: true, resolve: (d) => d.orderingSeq?.toString() ?? null }),
    dedupeKey: t.exposeString('dedupeKey', { nullable: true }),
    payload: t.field({ type: 'JSON', select: { payload: true }, resolve: (d, _args, ctx) => exactJson(ctx, 'dead_letters', 'payload', d) }),
    headers: t.field({
      type: 'JSON',
      description: 'Transport metadata: topic, partition, offset, trace ids…',
      select: { headers: true },
      resolve: (d, _args, ctx) => exactJson(ctx, 'dead_letters', 'headers', d),
    }),
    origin: t.field({
      type: 'JSON',
      nullable: true,
      select: { origin: true },
      resolve: (d, _args, ctx) => exactJson(ctx, 'dead_letters', 'origin', d),
      description: 'Where a broker bridge took the event from, e.g. `{ kind: "amqp", bridge, vhost, queue, exchange, routingKeys }`; null for events recorded otherwise. Shapes: docs/brokers.md.',
    }),
    error: t.field({
      type: DeadLetterErrorRef,
      resolve: (d) => ({ kind: d.errorKind, message: d.errorMessage, stack: d.errorStack }),
    }),
    errorSignature: t.exposeString('errorSignature', {
      description: 'The error message with ids, numbers and times replaced; use in `DeadLetterFilter.errorSignatures` to list its siblings. The message only: its error group’s signature adds the stack’s top frames.',
    }),
    errorGroupId: t.id({
      nullable: true,
      description: 'Its error group (`errorGroup(id)`): derived from event type, error kind and fingerprint, or else error signature and top stack frames, when the row is written. The group itself appears once the folder has seen it (a fraction of a second).',
      resolve: (d) => d.errorGroupId?.toString() ?? null,
    }),
    status: t.expose('status', { type: DeadLetterStatusEnum }),
    attempts: t.exposeInt('attempts', { description: 'Delivery attempts made so far.' }),
    maxAttemptsOverride: t.exposeInt('maxAttempts', {
      nullable: true,
      description: 'Per-event override of the retry policy’s max attempts; null uses the policy.',
    }),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true }),
    leaseExpiresAt: t.expose('leaseExpiresAt', { type: 'DateTime', nullable: true }),
    resolvedAt: t.expose('resolvedAt', { type: 'DateTime', nullable: true }),
    resolvedBy: t.exposeString('resolvedBy', { nullable: true }),
    resolutionReason: t.exposeString('resolutionReason', { nullable: true }),
    occurredAt: t.expose('occurredAt', { type: 'DateTime' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    version: t.exposeInt('version', { description: 'Bumped on every change; used for optimistic concurrency.' }),
    deliveryAttempts: t.relation('deliveryAttempts', {
      description: 'Every delivery attempt, oldest first.',
      query: { orderBy: { attemptNumber: 'asc' } },
    }),
  }),
});

builder.queryFields((t) => ({
  deadLetter: t.prismaField({
    type: 'DeadLetter',
    nullable: true,
    description: 'One dead letter by id, or null when there is none.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, args, ctx) =>
      readDeadLetter(ctx.db, parseId(args.id), query),
  }),
}));
