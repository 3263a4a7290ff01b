// Payload transforms (issue 19 item 3): one patch applied to every event a DeadLetterFilter selects
// (a group's members are the filter `{ groupId }`), previewed first, applied as one recorded change,
// undone exactly.
//
// Apply is ONE transaction, capped at MAX_TRANSFORM_EVENTS events: it reads the selection in batches
// of TRANSFORM_BATCH rows (locking each, FOR UPDATE), patches them here, checks the results against
// the payload CHECKs and writes them with their history rows. Any event the patch does not apply to
// (or whose result the CHECKs would refuse) rolls the whole transaction back, so the outcome is all
// or nothing and a crash or restart mid-way leaves nothing half-done: there is nothing to resume.
// We chose this over a resumable runner because all-or-nothing across batches committed separately
// would need compensating undo on failure. The cost: the transaction holds the live feed's horizon
// while it runs (docs/payload-transforms.md), so the cap keeps it to a few seconds.
// PROCESSING events (a worker holds them) are never selected.
import type { Db } from '../db/createDb.ts';
import { checkPayloadLimits, MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH } from '../db/sql/checkPayloadLimits.ts';
import { countDeadLetterTargets } from '../db/sql/countDeadLetterTargets.ts';
import { deadLetterWhereSql, type DeadLetterFilter } from '../db/sql/deadLetterWhere.ts';
import type { Queryable } from '../db/sql/queryable.ts';
import { restoreTransformedPayloads, type RestoreResult } from '../db/sql/restoreTransformedPayloads.ts';
import { selectTransformBatch, type TransformCandidate } from '../db/sql/selectTransformBatch.ts';
import { writeTransformBatch } from '../db/sql/writeTransformBatch.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import type { DeadLetterStatus } from '../generated/prisma/enums.ts';
import { ConflictError, DomainError, ValidationError } from './errors.ts';
import { optionalReason } from './operatorActions.ts';
import { applyPayloadPatch, type PayloadPatch } from './payloadPatch.ts';
import { allowedFromStatuses } from './transitions.ts';

/**
 * The most events one transform may select (the whole apply is one transaction). At 10,000 ~1 KB
 * payloads the apply took 2.6–3.8 s on the 2-core CI machine (npm run bench:transform), and the live
 * feed delivers nothing committed after it started until it ends.
 */
export const MAX_TRANSFORM_EVENTS = 10_000;
/** Rows read, patched and written per round trip. */
export const TRANSFORM_BATCH = 500;
/** How many ids each failure reason lists. */
export const FAILURE_ID_SAMPLE = 10;
export const MAX_PREVIEW_SAMPLE = 50;
/** How long the apply transaction may run before PostgreSQL's client gives up on it. */
const APPLY_TIMEOUT_MS = 300_000;

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

export interface TransformFailure {
  reason: string;
  count: number;
  /** The first FAILURE_ID_SAMPLE ids, ascending. */
  ids: bigint[];
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

export interface TransformPreview {
  /** Events the filter selects now (PROCESSING ones excluded). */
  matched: number;
  changed: number;
  unchanged: number;
  failed: number;
  failures: TransformFailure[];
  samples: { id: bigint; before: unknown; after: unknown }[];
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
    const samples: TransformPreview['samples'] = [];
    await scan(tx, where, false, async (batch) => {
      for (const { candidate, outcome } of await patchBatch(tx, o.patch, batch, tally)) {
        if (outcome.kind === 'changed' && samples.length < o.sample) samples.push({ id: candidate.id, before: outcome.before, after: outcome.after });
      }
    });
    return { ...summary(tally), samples };
  }, { isolationLevel: 'RepeatableRead', timeout: APPLY_TIMEOUT_MS });
}

export interface ApplyTransformOptions extends TransformRequest {
  reason: string | null;
  /** Make changed PENDING and EXHAUSTED events due now (edit-and-retry). */
  requeue: boolean;
  /** Change the events the patch applies to and leave the rest (default: all or nothing). */
  skipFailing: boolean;
}

/**
 * Applies the patch to every selected event in one transaction and records it as a transform.
 * Throws TransformNotApplicableError (nothing written) when the patch fails on any event and
 * `skipFailing` is off, or when any result would break the payload CHECKs (always).
 */
export async function applyTransform(db: Db, actor: string, o: ApplyTransformOptions): Promise<bigint> {
  const reason = optionalReason(o.reason);
  const where = selectionWhere(o.filter);
  await refuseOversized(db, where);
  const requeueFrom = o.requeue ? allowedFromStatuses('REQUEUE') : [];
  return db.$transaction(async (tx) => {
    const transform = await tx.transform.create({
      data: { kind: o.patch.kind, patch: patchDocument(o.patch) as Prisma.InputJsonValue, filter: filterJson(o.filter), requeue: o.requeue, reason, createdBy: actor },
      select: { id: true },
    });
    const tally = newTally();
    await scan(tx, where, true, async (batch) => {
      const results = await patchBatch(tx, o.patch, batch, tally);
      if (tally.failed > 0 && !o.skipFailing) return; // keep scanning for the full report; the rollback discards the writes
      if (tally.limitFailed > 0) return;
      const changed = results.filter((r) => r.outcome.kind === 'changed');
      if (changed.length === 0) return;
      await writeTransformBatch(tx, {
        transformId: transform.id,
        ids: changed.map((r) => r.candidate.id),
        payloadJsons: changed.map((r) => (r.outcome as { afterJson: string }).afterJson),
        requeueFrom,
        actor,
        reason,
      });
    });
    if (tally.matched > MAX_TRANSFORM_EVENTS) throw oversized(tally.matched);
    if (tally.limitFailed > 0 || (tally.failed > 0 && !o.skipFailing)) throw new TransformNotApplicableError(tally.failed, failureList(tally));
    const s = summary(tally);
    await tx.transform.update({ where: { id: transform.id }, data: { matched: s.matched, changed: s.changed, unchanged: s.unchanged, failed: s.failed } });
    return transform.id;
  }, { timeout: APPLY_TIMEOUT_MS });
}

export interface UndoResult extends RestoreResult {
  transformId: bigint;
}

/**
 * Restores every payload the transform changed, unless it was edited since (those are reported and
 * left). A transform can be undone once (InvalidTransitionError after that).
 */
export async function undoTransform(db: Db, actor: string, o: { id: bigint; reason: string | null }): Promise<UndoResult> {
  const reason = optionalReason(o.reason);
  return db.$transaction(async (tx) => {
    // Taking the row lock first makes two concurrent undos of one transform run one after the other.
    const claimed = await tx.transform.updateMany({
      where: { id: o.id, status: 'APPLIED' },
      data: { status: 'UNDONE', undoneAt: new Date(), undoneBy: actor, undoReason: reason },
    });
    if (claimed.count === 0) {
      const existing = await tx.transform.findUnique({ where: { id: o.id }, select: { status: true } });
      if (!existing) throw new TransformNotFoundError(o.id);
      throw new ConflictError([o.id], `transform ${o.id} was already undone`);
    }
    const result = await restoreTransformedPayloads(tx, { transformId: o.id, actor, reason, sample: 100 });
    await tx.transform.update({ where: { id: o.id }, data: { restored: result.restored, keptEdited: result.edited, keptMissing: result.missing } });
    return { ...result, transformId: o.id };
  }, { timeout: APPLY_TIMEOUT_MS });
}

// --- the scan shared by preview and apply ---

interface Tally {
  matched: number;
  changed: number;
  unchanged: number;
  /** Events the patch did not apply to. */
  failed: number;
  /** Events whose result the payload CHECKs would refuse (counted in `failed` too). */
  limitFailed: number;
  reasons: Map<string, { count: number; ids: bigint[] }>;
}

const newTally = (): Tally => ({ matched: 0, changed: 0, unchanged: 0, failed: 0, limitFailed: 0, reasons: new Map() });

function fail(tally: Tally, id: bigint, reason: string): void {
  tally.failed++;
  const entry = tally.reasons.get(reason) ?? { count: 0, ids: [] };
  entry.count++;
  if (entry.ids.length < FAILURE_ID_SAMPLE) entry.ids.push(id);
  tally.reasons.set(reason, entry);
}

type Patched = { candidate: TransformCandidate; outcome: ReturnType<typeof applyPayloadPatch> };

/** Patches one batch, checks the changed results against the CHECKs, and counts every outcome. */
async function patchBatch(tx: Queryable, patch: PayloadPatch, batch: TransformCandidate[], tally: Tally): Promise<Patched[]> {
  const results = batch.map((candidate) => ({ candidate, outcome: applyPayloadPatch(patch, candidate.payloadText) }));
  const changed = results.filter((r) => r.outcome.kind === 'changed');
  const violations = await checkPayloadLimits(tx, {
    ids: changed.map((r) => r.candidate.id),
    payloadJsons: changed.map((r) => (r.outcome as { afterJson: string }).afterJson),
  });
  const refused = new Map(violations.map((v) => [v.id, v]));
  for (const r of results) {
    tally.matched++;
    const v = refused.get(r.candidate.id);
    if (v) {
      tally.limitFailed++;
      fail(tally, r.candidate.id, v.tooDeep
        ? `the result would be nested deeper than ${MAX_PAYLOAD_DEPTH} levels (payload depth CHECK)`
        : `the result would be larger than ${MAX_PAYLOAD_BYTES} bytes (payload size CHECK)`);
      r.outcome = { kind: 'failed', reason: 'CHECK' };
    } else if (r.outcome.kind === 'failed') fail(tally, r.candidate.id, r.outcome.reason);
    else if (r.outcome.kind === 'unchanged') tally.unchanged++;
    else tally.changed++;
  }
  return results;
}

async function scan(tx: Queryable, where: Prisma.Sql, lock: boolean, onBatch: (batch: TransformCandidate[]) => Promise<void>): Promise<void> {
  let afterId = 0n;
  let seen = 0;
  for (;;) {
    const batch = await selectTransformBatch(tx, { where, allowed: TRANSFORMABLE, afterId, limit: TRANSFORM_BATCH, lock });
    if (batch.length === 0) return;
    seen += batch.length;
    if (seen > MAX_TRANSFORM_EVENTS) throw oversized(seen);
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
  if (count > MAX_TRANSFORM_EVENTS) throw oversized(count);
}

const oversized = (count: number) =>
  new ValidationError('filter', `selects ${count} or more events; a transform changes at most ${MAX_TRANSFORM_EVENTS} (narrow the filter, e.g. by createdAt)`);

function failureList(tally: Tally): TransformFailure[] {
  return [...tally.reasons.entries()]
    .map(([reason, e]) => ({ reason, count: e.count, ids: e.ids }))
    .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
}

function summary(tally: Tally): Omit<TransformPreview, 'samples'> {
  return { matched: tally.matched, changed: tally.changed, unchanged: tally.unchanged, failed: tally.failed, failures: failureList(tally) };
}

function patchDocument(patch: PayloadPatch): unknown {
  return patch.kind === 'JSON_PATCH' ? patch.operations : patch.document;
}

function filterJson(filter: DeadLetterFilter): Prisma.InputJsonValue {
  return JSON.parse(JSON.stringify(filter, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))) as Prisma.InputJsonValue;
}
