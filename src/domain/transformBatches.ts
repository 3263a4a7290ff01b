// One batch of a RUNNING or UNDOING payload transform, run by the redrive runner
// (src/workers/redriveRunner.ts) under its lease, or by the API request itself for a transform of
// one batch. States: PREPARING → RUNNING → APPLIED | FAILED; RUNNING | APPLIED | FAILED → UNDOING →
// UNDONE | FAILED (migration 20261126120000_transform_batches).
//
// An apply batch is one short transaction: lock the transform (held check), lock its next
// TRANSFORM_BATCH targets, skip those deleted, PROCESSING or edited since the validation read them
// (md5 of payload::text), patch the rest, check the results against the payload CHECKs, write
// payloads + history (+ requeue), delete the handled items and add the counts. So a batch either
// happened whole or not at all, and after a crash the items left are exactly the work left: no
// member is patched twice. An undo batch is restoreTransformedPayloads in the same transaction shape.
import type { Db } from '../db/createDb.ts';
import { clearTransformLease, markTransformFailed } from '../db/models/transforms.ts';
import { lockHeldTransform, selectTransformTargets, type HeldTransform } from '../db/sql/lockTransformBatch.ts';
import { recordTransformBatch } from '../db/sql/recordTransformBatch.ts';
import { restoreTransformedPayloads } from '../db/sql/restoreTransformedPayloads.ts';
import { writeTransformBatch } from '../db/sql/writeTransformBatch.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { parsePayloadPatch, type PayloadPatch } from './payloadPatch.ts';
import { failureList, failuresJson, newTally, parseFailures, patchBatch } from './transformTally.ts';
import { allowedFromStatuses } from './transitions.ts';

/** Targets patched (or history rows restored) per transaction: ~100–250 ms of work on 2 cores. */
export const TRANSFORM_BATCH = 500;
/** How many skipped (and, on undo, kept) ids a transform keeps for its report. */
export const SKIPPED_ID_SAMPLE = 100;
/** The longest one batch's transaction may stay open before PostgreSQL's client gives up on it. */
const BATCH_TIMEOUT_MS = 60_000;

export interface TransformBatchResult {
  /** False when the transform was not RUNNING or UNDOING under this owner's lease: nothing was done. */
  held: boolean;
  phase: 'APPLY' | 'UNDO';
  /** Targets (apply) or history rows (undo) handled. */
  scanned: number;
  /** Payloads written (apply) or restored (undo). */
  written: number;
  /** True when this batch finished the transform (APPLIED or UNDONE). */
  completed: boolean;
}

/**
 * Runs the next batch of a transform this owner holds the lease on. `limit` is the batch size
 * (default TRANSFORM_BATCH); bench:transform passes the whole selection for its one-transaction baseline.
 */
export function runTransformBatch(db: Db, p: { id: bigint; owner: string; leaseSeconds: number; limit?: number }): Promise<TransformBatchResult> {
  const limit = p.limit ?? TRANSFORM_BATCH;
  return db.$transaction(async (tx) => {
    const held = await lockHeldTransform(tx, p);
    if (!held) return { held: false, phase: 'APPLY', scanned: 0, written: 0, completed: false };
    if (held.status === 'UNDOING') {
      const r = await restoreTransformedPayloads(tx, { transformId: p.id, owner: p.owner, leaseSeconds: p.leaseSeconds, limit, sample: SKIPPED_ID_SAMPLE });
      return { held: r.held, phase: 'UNDO', scanned: r.scanned, written: r.restored, completed: r.completed };
    }
    return applyBatch(tx, held, limit, p.leaseSeconds);
  }, { timeout: BATCH_TIMEOUT_MS });
}

async function applyBatch(tx: Prisma.TransactionClient, held: HeldTransform, limit: number, leaseSeconds: number): Promise<TransformBatchResult> {
  const targets = await selectTransformTargets(tx, { transformId: held.id, limit });
  const skippedIds: bigint[] = [];
  const candidates: { id: bigint; payloadText: string }[] = [];
  for (const t of targets) {
    if (t.current === null || t.current.status === 'PROCESSING' || !t.current.isUnchangedSinceValidated) skippedIds.push(t.id);
    else candidates.push({ id: t.id, payloadText: t.current.payloadText });
  }
  const tally = newTally();
  const results = await patchBatch(tx, storedPatch(held), candidates, tally);
  const changed = results.filter((r) => r.outcome.kind === 'changed');
  if (changed.length > 0) {
    await writeTransformBatch(tx, {
      transformId: held.id,
      ids: changed.map((r) => r.id),
      payloadJsons: changed.map((r) => (r.outcome as { afterJson: string }).afterJson),
      requeueFrom: held.requeue ? allowedFromStatuses('REQUEUE') : [],
      actor: held.createdBy,
      reason: held.reason,
    });
  }
  const completed = await recordTransformBatch(tx, {
    transformId: held.id,
    ids: targets.map((t) => t.id),
    changed: tally.changed,
    unchanged: tally.unchanged,
    failed: tally.failed,
    skippedIds,
    failuresJson: failuresJson(failureList(tally, parseFailures(held.failures))),
    leaseSeconds,
    skippedSample: SKIPPED_ID_SAMPLE,
  });
  return { held: true, phase: 'APPLY', scanned: targets.length, written: tally.changed, completed };
}

/** The patch as recorded, checked again (as when it was recorded) for the sizes it carries. */
function storedPatch(held: HeldTransform): PayloadPatch {
  return parsePayloadPatch(held.kind === 'JSON_PATCH' ? { patch: held.patch } : { mergePatch: held.patch });
}

/** Marks a RUNNING or UNDOING transform FAILED with the error that kept its batches from committing. */
export async function failTransform(db: Db, id: bigint, error: string): Promise<void> {
  await markTransformFailed(db, id, error.slice(0, 2_000));
}

/** Gives a lease back (the API request that ran the first batch), so the runner's next poll takes it. */
export async function releaseTransformLease(db: Db, id: bigint, owner: string): Promise<void> {
  await clearTransformLease(db, id, owner);
}
