// Payload transforms (issue 19 item 3): one patch applied to every event a DeadLetterFilter selects
// (a group's members are the filter `{ groupId }`), previewed first, applied as one recorded
// change in resumable batches, undone exactly.
//
// applyTransform first runs a validation pass over the whole selection, read-only and in batches of
// TRANSFORM_BATCH (no transaction held across them): if the patch fails on any event (unless
// skipFailing) or any result would break the payload CHECKs (always), it refuses with the failures
// by reason, as preview reports them, and writes nothing. Otherwise it records the transform
// (PREPARING) with its exact targets — every validated id with the md5 of the payload::text it
// validated, kept compactly in memory (24 bytes an event) and written in chunks of
// RECORD_CHUNK, each one short statement — then moves it to RUNNING, and the redrive runner
// applies it in batches, each one short transaction (src/domain/transformBatches.ts). A transform
// of at most one batch is run by the request itself, so it is APPLIED when the mutation returns;
// a larger one returns RUNNING and its progress is on the row. undoTransform moves it to UNDOING
// the same way. PROCESSING events are never selected, and skipped when they are at their batch.
import { createHash, randomUUID } from 'node:crypto';
import type { Db } from '../db/createDb.ts';
import { parseJsonKeepingNumbers } from '../db/exactJson.ts';
import { countDeadLetterTargets } from '../db/sql/countDeadLetterTargets.ts';
import { deadLetterWhereSql, type DeadLetterFilter } from '../db/sql/deadLetterWhere.ts';
import { insertTransform, insertTransformItems, startPreparedTransform } from '../db/sql/insertTransform.ts';
import type { Queryable } from '../db/sql/queryable.ts';
import { selectTransformBatch, type TransformCandidate } from '../db/sql/selectTransformBatch.ts';
import { startTransformUndo } from '../db/sql/startTransformUndo.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import type { DeadLetterStatus } from '../generated/prisma/enums.ts';
import { ConflictError, DomainError, ValidationError } from './errors.ts';
import { optionalReason } from './operatorActions.ts';
import type { PayloadPatch } from './payloadPatch.ts';
import { releaseTransformLease, runTransformBatch, TRANSFORM_BATCH } from './transformBatches.ts';
import { failureList, newTally, patchBatch, type Tally, type TransformFailure } from './transformTally.ts';
import { allowedFromStatuses } from './transitions.ts';

export { FAILURE_ID_SAMPLE, type TransformFailure } from './transformTally.ts';
export { TRANSFORM_BATCH } from './transformBatches.ts';

/**
 * The most events one transform may select. Batches make any size safe for the live feed; what
 * grows with the selection is the mutation itself: the validation pass reads every payload (about a
 * preview's time: ~0.8 s per 10,000 ~1 KB events on the 2-core CI machine, docs/benchmarks.md
 * Session 14) and keeps 24 bytes per target until they are recorded (24 MB at the cap). Past a
 * million, narrow the filter (by createdAt).
 */
export const MAX_TRANSFORM_EVENTS = 1_000_000;
export const MAX_PREVIEW_SAMPLE = 50;
/** The lease the API request takes to run a one-batch transform itself (the runner's default too). */
export const TRANSFORM_LEASE_SECONDS = 30;
/** Targets written per statement while a transform is recorded. */
const RECORD_CHUNK = 5_000;
/** How long a preview's snapshot may stay open. */
const PREVIEW_TIMEOUT_MS = 600_000;

/** Every status but PROCESSING: a worker holds those and is about to record the outcome. */
const TRANSFORMABLE: DeadLetterStatus[] = allowedFromStatuses('EDIT_PAYLOAD');

export class TransformNotFoundError extends DomainError {
  override name = 'TransformNotFoundError';
  readonly id: bigint;
  constructor(id: bigint) {
    super('NOT_FOUND', `no transform with id ${id}`);
    this.id = id;
  }
}

/** The patch does not apply to some of the selected events, so nothing was changed. */
export class TransformNotApplicableError extends DomainError {
  override name = 'TransformNotApplicableError';
  readonly failed: number;
  readonly failures: TransformFailure[];
  constructor(failed: number, failures: TransformFailure[]) {
    super('VALIDATION', `the patch does not apply to ${failed} of the selected events (${failures[0]?.reason ?? ''}${failures.length > 1 ? ', …' : ''}); nothing was changed`);
    this.failed = failed;
    this.failures = failures;
  }
}

/** Statuses whose retrying has ended: a transform still rewrites their stored payload. */
export const FINISHED_STATUSES: readonly DeadLetterStatus[] = ['SUCCEEDED', 'RESOLVED', 'DISCARDED'];

export interface TransformPreview {
  /** Events the filter selects now (PROCESSING ones excluded). */
  matched: number;
  changed: number;
  unchanged: number;
  failed: number;
  failures: TransformFailure[];
  /** Matched events per status, most first (ties by status). */
  byStatus: { status: DeadLetterStatus; count: number }[];
  /** Matched events already SUCCEEDED, RESOLVED or DISCARDED. */
  finished: number;
  samples: { id: bigint; status: DeadLetterStatus; before: unknown; after: unknown }[];
}

export interface TransformRequest {
  filter: DeadLetterFilter;
  patch: PayloadPatch;
}

/** What the patch would do to each selected event, read from one snapshot; writes nothing. */
export async function previewTransform(db: Db, o: TransformRequest & { sample: number }): Promise<TransformPreview> {
  if (!Number.isInteger(o.sample) || o.sample < 0 || o.sample > MAX_PREVIEW_SAMPLE) {
    throw new ValidationError('sample', `must be an integer from 0 to ${MAX_PREVIEW_SAMPLE}`);
  }
  const where = selectionWhere(o.filter);
  await refuseOversized(db, where);
  return db.$transaction(async (tx) => {
    const tally = newTally();
    const statuses = new Map<DeadLetterStatus, number>();
    const samples: TransformPreview['samples'] = [];
    await scan(tx, where, async (batch) => {
      for (const [i, { id, outcome }] of (await patchBatch(tx, o.patch, batch, tally)).entries()) {
        const { status, payloadText } = batch[i]!;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (outcome.kind === 'changed' && samples.length < o.sample) samples.push({ id, status, before: parseJsonKeepingNumbers(payloadText), after: parseJsonKeepingNumbers(outcome.afterJson) });
      }
    });
    const byStatus = [...statuses].map(([status, count]) => ({ status, count })).sort((a, b) => b.count - a.count || a.status.localeCompare(b.status));
    const finished = byStatus.filter((s) => FINISHED_STATUSES.includes(s.status)).reduce((n, s) => n + s.count, 0);
    return { ...summary(tally), byStatus, finished, samples };
  }, { isolationLevel: 'RepeatableRead', timeout: PREVIEW_TIMEOUT_MS });
}

export interface ApplyTransformOptions extends TransformRequest {
  reason: string | null;
  /** Make changed PENDING and EXHAUSTED events due now (edit-and-retry), batch by batch. */
  requeue: boolean;
  /** Change the events the patch applies to and leave the rest (default: all or nothing). */
  skipFailing: boolean;
}

/**
 * Validates the patch on every selected event, then records the transform (PREPARING → RUNNING) for the runner
 * to apply in batches; one of at most TRANSFORM_BATCH events is applied before this returns.
 * Throws TransformNotApplicableError (nothing written) when the patch fails on any event and
 * `skipFailing` is off, or when any result would break the payload CHECKs (always).
 */
export async function applyTransform(db: Db, actor: string, o: ApplyTransformOptions): Promise<bigint> {
  const reason = optionalReason(o.reason);
  const where = selectionWhere(o.filter);
  await refuseOversized(db, where);
  const tally = newTally();
  const targets: { ids: BigInt64Array; md5s: Buffer }[] = [];
  await scan(db, where, async (batch) => {
    await patchBatch(db, o.patch, batch, tally);
    targets.push(targetsOf(batch));
  });
  if (tally.limitFailed > 0 || (tally.failed > 0 && !o.skipFailing)) throw new TransformNotApplicableError(tally.failed, failureList(tally));
  const owner = `api-${randomUUID()}`;
  const id = await insertTransform(db, {
    kind: o.patch.kind,
    patchJson: JSON.stringify(o.patch.kind === 'JSON_PATCH' ? o.patch.operations : o.patch.document),
    filterJson: JSON.stringify(o.filter, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)),
    requeue: o.requeue,
    skipFailing: o.skipFailing,
    reason,
    actor,
    matched: tally.matched,
    owner,
    leaseSeconds: TRANSFORM_LEASE_SECONDS,
  });
  await recordTargets(db, id, owner, targets);
  const runsFirstBatch = tally.matched <= TRANSFORM_BATCH;
  if (!(await startPreparedTransform(db, { transformId: id, owner, keepLease: runsFirstBatch }))) throw abandoned(id);
  if (runsFirstBatch) await runFirstBatch(db, id, owner);
  return id;
}

/** Ids and md5(payload::text) of a validated batch: PostgreSQL's md5 of text is of its UTF-8 bytes, as here. */
function targetsOf(batch: TransformCandidate[]): { ids: BigInt64Array; md5s: Buffer } {
  const md5s = Buffer.alloc(batch.length * 16);
  batch.forEach((c, i) => createHash('md5').update(c.payloadText, 'utf8').digest().copy(md5s, i * 16));
  return { ids: BigInt64Array.from(batch, (c) => c.id), md5s };
}

async function recordTargets(db: Db, transformId: bigint, owner: string, targets: { ids: BigInt64Array; md5s: Buffer }[]): Promise<void> {
  let ids: bigint[] = [];
  let md5s: string[] = [];
  const flush = async () => {
    if (ids.length === 0) return;
    if (!(await insertTransformItems(db, { transformId, owner, leaseSeconds: TRANSFORM_LEASE_SECONDS, ids, md5s }))) throw abandoned(transformId);
    ids = [];
    md5s = [];
  };
  for (const chunk of targets) {
    chunk.ids.forEach((id, i) => {
      ids.push(id);
      md5s.push(chunk.md5s.toString('hex', i * 16, i * 16 + 16));
    });
    if (ids.length >= RECORD_CHUNK) await flush();
  }
  await flush();
}

// Only when recording took longer than the lease (the runner then marks the transform FAILED).
const abandoned = (id: bigint) => new Error(`transform ${id}: recording its targets took longer than its ${TRANSFORM_LEASE_SECONDS} s lease; it was marked FAILED and changed nothing`);

/**
 * Starts undoing a transform: every payload it changed is restored (the same jsonb), except those
 * edited since, which are counted and sampled. A RUNNING transform stops after its batch in flight
 * and what it applied so far is undone. Undo of at most TRANSFORM_BATCH changed events completes
 * before this returns; a larger one is UNDOING and the runner continues it. Throws
 * TransformNotFoundError, or ConflictError when it is being or was already undone.
 */
export async function undoTransform(db: Db, actor: string, o: { id: bigint; reason: string | null }): Promise<bigint> {
  const reason = optionalReason(o.reason);
  const owner = `api-${randomUUID()}`;
  const undo = await startTransformUndo(db, { id: o.id, actor, reason, owner, leaseSeconds: TRANSFORM_LEASE_SECONDS });
  if (undo.status === null) throw new TransformNotFoundError(o.id);
  if (!undo.started) throw new ConflictError([o.id], `transform ${o.id} ${undo.status === 'UNDOING' ? 'is being undone' : undo.status === 'PREPARING' ? 'is still being recorded' : 'was already undone'}`);
  if (undo.changed <= TRANSFORM_BATCH) await runFirstBatch(db, o.id, owner);
  else await releaseTransformLease(db, o.id, owner);
  return o.id;
}

/** Runs one batch under the request's lease; whatever is left goes to the runner. */
async function runFirstBatch(db: Db, id: bigint, owner: string): Promise<void> {
  let completed = false;
  try {
    completed = (await runTransformBatch(db, { id, owner, leaseSeconds: TRANSFORM_LEASE_SECONDS })).completed;
  } finally {
    if (!completed) await releaseTransformLease(db, id, owner);
  }
}

async function scan(db: Queryable, where: Prisma.Sql, onBatch: (batch: TransformCandidate[]) => Promise<void>): Promise<void> {
  let afterId = 0n;
  for (;;) {
    const batch = await selectTransformBatch(db, { where, allowed: TRANSFORMABLE, afterId, limit: TRANSFORM_BATCH });
    if (batch.length === 0) return;
    await onBatch(batch);
    if (batch.length < TRANSFORM_BATCH) return;
    afterId = batch[batch.length - 1]!.id;
  }
}

function selectionWhere(filter: DeadLetterFilter): Prisma.Sql {
  // The bulk actions' rule: an empty filter would select the whole table, so it is refused.
  if (Object.keys(filter).length === 0) {
    throw new ValidationError('filter', 'must set at least one field (an empty filter would select every dead letter)');
  }
  return deadLetterWhereSql(filter);
}

async function refuseOversized(db: Db, where: Prisma.Sql): Promise<void> {
  const { count } = await countDeadLetterTargets(db, { where, allowed: TRANSFORMABLE, sample: 0 });
  if (count > MAX_TRANSFORM_EVENTS) {
    throw new ValidationError('filter', `selects ${count} events; a transform changes at most ${MAX_TRANSFORM_EVENTS} (narrow the filter, e.g. by createdAt)`);
  }
}

function summary(tally: Tally): Omit<TransformPreview, 'samples' | 'byStatus' | 'finished'> {
  return { matched: tally.matched, changed: tally.changed, unchanged: tally.unchanged, failed: tally.failed, failures: failureList(tally) };
}
