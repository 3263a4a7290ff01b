import type { Db } from '../db/createDb.ts';
import { findDeadLetterIdsByDedupeKey } from '../db/models/deadLetters.ts';
import { insertDeadLetters } from '../db/sql/insertDeadLetters.ts';
import { describeCheckViolation } from '../db/errors.ts';
import { ValidationError } from './errors.ts';
import { MAX_BATCH, validateRecordInput, type RecordDeadLetterInput, type RecordRules, type ValidRecord } from './recordInput.ts';

export interface RecordOutcome {
  /** The stored dead letter: the new one, or the one already stored under the same dedupe key. */
  id: bigint;
  /** False when the dedupe key was already known and nothing was stored. */
  created: boolean;
}

/**
 * Stores producer failures in one statement, idempotent on the dedupe key. The whole batch is
 * validated first: one bad item refuses the batch (ValidationError with its index), writing nothing.
 * Outcomes come back in input order.
 */
export async function recordDeadLetters(
  db: Db,
  rules: RecordRules,
  actor: string,
  inputs: RecordDeadLetterInput[],
): Promise<RecordOutcome[]> {
  if (inputs.length === 0) throw new ValidationError('inputs', 'must hold at least one dead letter');
  if (inputs.length > MAX_BATCH) throw new ValidationError('inputs', `must hold at most ${MAX_BATCH} dead letters, got ${inputs.length}`);
  const rows = inputs.map((input, i) => validateRecordInput(input, rules, inputs.length === 1 ? null : i));
  return storeValidRecords(db, actor, rows);
}

/**
 * Stores rows already validated (validateRecordInput) in one statement, idempotent on the dedupe
 * key, outcomes in input order: for a caller that validates item by item and sets a bad one aside
 * (a broker bridge) instead of refusing the batch.
 */
export async function storeValidRecords(db: Db, actor: string, rows: ValidRecord[]): Promise<RecordOutcome[]> {
  if (rows.length === 0) return [];
  const inserted = await insertDeadLetters(db, rows, actor).catch((error: unknown) => {
    const check = describeCheckViolation(error);
    throw check ? new ValidationError(check.field, check.message, null, { cause: error }) : error;
  });
  const missing = inserted.filter((r) => r.id === null);
  if (missing.length) {
    // The duplicate was committed by a concurrent producer after this statement's snapshot.
    const keys = missing.map((r) => rows[r.idx]!.dedupeKey!);
    const found = await findDeadLetterIdsByDedupeKey(db, keys);
    const byKey = new Map(found.map((f) => [f.dedupeKey, f.id]));
    for (const r of missing) r.id = byKey.get(rows[r.idx]!.dedupeKey) ?? null;
  }
  return inserted.map((r) => {
    if (r.id === null) throw new Error(`dead letter ${r.idx} was neither stored nor found by dedupe key`);
    return { id: r.id, created: r.created };
  });
}
