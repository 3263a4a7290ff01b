// Operator changes: requeue, resolve, discard, delete, edit payload, add note. Each takes either
// explicit ids (all change or none: NOT_FOUND / CONFLICT) or a filter (whatever is eligible now),
// and runs as one compare-and-set statement that also writes its history rows.
import type { Db } from '../db/createDb.ts';
import { closeDeadLetters } from '../db/sql/closeDeadLetters.ts';
import { countDeadLetterTargets } from '../db/sql/countDeadLetterTargets.ts';
import { countWithoutSource } from '../db/sql/countWithoutSource.ts';
import { deleteDeadLetters } from '../db/sql/deleteDeadLetters.ts';
import { editDeadLetterPayload } from '../db/sql/editDeadLetterPayload.ts';
import { insertDeadLetterNote } from '../db/sql/insertDeadLetterNote.ts';
import { requeueDeadLetters } from '../db/sql/requeueDeadLetters.ts';
import { selectDeadLetterStates } from '../db/sql/selectDeadLetterStates.ts';
import { isExpectRowsViolation, RESULT_SAMPLE, type ChangeResult, type WriteTarget } from '../db/sql/writeTarget.ts';
import { deadLetterWhereSql, type DeadLetterFilter } from '../db/sql/deadLetterWhere.ts';
import { ConflictError, DeadLetterNotFoundError, InvalidTransitionError, NoSourceError, ValidationError } from './errors.ts';
import { validateRecordInput } from './recordInput.ts';
import { allowedFromStatuses, transitionHint, type OperatorAction } from './transitions.ts';

export const MAX_BULK_IDS = 1000;
export const MAX_REASON_LENGTH = 2000;
/** How many affected ids a result (or dry run) lists. */
export const RESULT_ID_SAMPLE = RESULT_SAMPLE;

export type Selection =
  /** `expectedVersions[i]` is the version of `ids[i]` the caller saw; null skips that check. */
  | { ids: bigint[]; expectedVersions?: number[] | null }
  | { filter: DeadLetterFilter };

export interface BulkResult {
  /** Rows changed, or for a dry run rows that would change. */
  count: number;
  /** The first RESULT_ID_SAMPLE of those ids, ascending. */
  ids: bigint[];
  dryRun: boolean;
  /** For a requeue to source: how many of the selected events have no usable source (a dry run counts them; a real one refuses). */
  withoutSource?: number;
}

/** Where a requeued event is delivered: its policy's target, or back to where a bridge took it from. */
export type Destination = 'POLICY' | 'SOURCE';

export interface RequeueOptions {
  selection: Selection;
  dryRun: boolean;
  /** Next attempt time; null means now. */
  at: Date | null;
  resetAttempts: boolean;
  /** Also requeue SUCCEEDED, RESOLVED and DISCARDED events. */
  force: boolean;
  reason: string | null;
  /** Default POLICY. */
  destination?: Destination;
  /** The declared bridges' names: a requeue to source refuses events whose origin names none of them. */
  sourceBridges?: readonly string[];
}

/** Requeues the selection. PROCESSING rows are never touched; final ones need `force`. */
export async function requeue(db: Db, actor: string, o: RequeueOptions): Promise<BulkResult> {
  const reason = optionalReason(o.reason);
  const allowed = allowedFromStatuses('REQUEUE', o.force);
  const isToSource = o.destination === 'SOURCE';
  const withoutSource = isToSource ? await checkSources(db, o) : undefined;
  const result = await runBulk(db, 'REQUEUE', o.selection, o.dryRun, o.force, (target) =>
    requeueDeadLetters(db, { target, allowed, at: o.at, resetAttempts: o.resetAttempts, actor, reason, redriveId: null, isToSource }));
  return isToSource ? { ...result, withoutSource } : result;
}

/**
 * For a requeue to source: how many selected events have no usable source. A dry run only counts
 * them; a real requeue with any refuses with NoSourceError before it writes. An empty filter is left
 * to the requeue's own refusal.
 */
export async function checkSources(db: Db, o: Pick<RequeueOptions, 'selection' | 'force' | 'dryRun' | 'sourceBridges'>): Promise<number> {
  if ('filter' in o.selection && Object.keys(o.selection.filter).length === 0) return 0;
  const selection = 'ids' in o.selection
    ? { kind: 'ids' as const, ids: o.selection.ids }
    : { kind: 'filter' as const, where: deadLetterWhereSql(o.selection.filter), allowed: allowedFromStatuses('REQUEUE', o.force) };
  const { count, ids } = await countWithoutSource(db, { selection, bridges: o.sourceBridges ?? [], sample: RESULT_ID_SAMPLE });
  if (count > 0 && !o.dryRun) throw new NoSourceError(count, ids);
  return count;
}

/** Marks the selection RESOLVED (handled elsewhere) or DISCARDED (dropped on purpose); needs a reason. */
export async function close(
  db: Db,
  actor: string,
  to: 'RESOLVED' | 'DISCARDED',
  o: { selection: Selection; dryRun: boolean; reason: string },
): Promise<BulkResult> {
  const reason = requiredReason(o.reason);
  const action: OperatorAction = to === 'RESOLVED' ? 'RESOLVE' : 'DISCARD';
  const allowed = allowedFromStatuses(action);
  return runBulk(db, action, o.selection, o.dryRun, false, (target) => closeDeadLetters(db, { target, allowed, to, actor, reason }));
}

/** Deletes the selection (not PROCESSING rows); each deleted row is kept in its history entry. */
export async function remove(db: Db, actor: string, o: { selection: Selection; dryRun: boolean; reason: string | null }): Promise<BulkResult> {
  const reason = optionalReason(o.reason);
  const allowed = allowedFromStatuses('DELETE');
  return runBulk(db, 'DELETE', o.selection, o.dryRun, false, (target) => deleteDeadLetters(db, { target, allowed, actor, reason }));
}

/**
 * Replaces one payload (checked against `expectedVersion` when given), keeping the old payload in
 * history; with `requeue` the event is also made due now (edit-and-retry).
 */
export async function editPayload(
  db: Db,
  actor: string,
  o: { id: bigint; payload: unknown; expectedVersion: number | null; requeue: boolean; reason: string | null },
): Promise<void> {
  const reason = optionalReason(o.reason);
  const payloadJson = validateRecordInput({ eventType: 'x', payload: o.payload }, { allowedEventTypes: [] }).payloadJson;
  const action: OperatorAction = o.requeue ? 'REQUEUE' : 'EDIT_PAYLOAD';
  const [state] = await checkIds(db, action, [o.id], false);
  if (o.expectedVersion !== null && o.expectedVersion !== state!.version) throw new ConflictError([o.id]);
  const allowed = allowedFromStatuses(action);
  const changed = await editDeadLetterPayload(db, { id: o.id, version: state!.version, allowed, payloadJson, requeue: o.requeue, actor, reason });
  if (!changed) throw new ConflictError([o.id]);
}

/** Adds a free-text note to an event's history. */
export async function addNote(db: Db, actor: string, o: { id: bigint; note: string }): Promise<bigint> {
  const note = requiredReason(o.note, 'note');
  const actionId = await insertDeadLetterNote(db, { id: o.id, actor, note });
  if (actionId === null) throw new DeadLetterNotFoundError([o.id]);
  return actionId;
}

async function runBulk(
  db: Db,
  action: OperatorAction,
  selection: Selection,
  dryRun: boolean,
  force: boolean,
  change: (target: WriteTarget) => Promise<ChangeResult>,
): Promise<BulkResult> {
  if ('ids' in selection) {
    const ids = [...new Set(selection.ids)];
    if (ids.length !== selection.ids.length) throw new ValidationError('ids', 'must not repeat an id');
    if (ids.length === 0) throw new ValidationError('ids', 'must name at least one dead letter');
    if (ids.length > MAX_BULK_IDS) throw new ValidationError('ids', `must name at most ${MAX_BULK_IDS} dead letters; use a filter for more`);
    const states = await checkIds(db, action, ids, force);
    if (selection.expectedVersions) {
      const expected = new Map(ids.map((id, i) => [id, selection.expectedVersions![i]]));
      const stale = states.filter((s) => s.version !== expected.get(s.id)).map((s) => s.id);
      if (stale.length) throw new ConflictError(stale);
    }
    if (dryRun) return { count: states.length, ids: states.slice(0, RESULT_ID_SAMPLE).map((s) => s.id), dryRun };
    const result = await change({ kind: 'ids', rows: states }).catch((error: unknown) => {
      throw isExpectRowsViolation(error) ? new ConflictError(ids) : error;
    });
    return { ...result, dryRun };
  }
  if (Object.keys(selection.filter).length === 0) {
    throw new ValidationError('filter', 'must set at least one field (an empty filter would select every dead letter)');
  }
  const where = deadLetterWhereSql(selection.filter);
  if (dryRun) {
    const { count, ids } = await countDeadLetterTargets(db, { where, allowed: allowedFromStatuses(action, force), sample: RESULT_ID_SAMPLE });
    return { count, ids, dryRun };
  }
  return { ...(await change({ kind: 'filter', where })), dryRun };
}

async function checkIds(db: Db, action: OperatorAction, ids: bigint[], force: boolean) {
  const states = await selectDeadLetterStates(db, ids);
  if (states.length < ids.length) {
    const found = new Set(states.map((s) => s.id));
    throw new DeadLetterNotFoundError(ids.filter((id) => !found.has(id)));
  }
  const allowed = allowedFromStatuses(action, force);
  const illegal = states.filter((s) => !allowed.includes(s.status));
  if (illegal.length) {
    const from = illegal[0]!.status;
    throw new InvalidTransitionError(illegal.filter((s) => s.status === from).map((s) => s.id), from, action, transitionHint(action, from));
  }
  return states;
}

function requiredReason(reason: string | null | undefined, field = 'reason'): string {
  const trimmed = reason?.trim() ?? '';
  if (!trimmed) throw new ValidationError(field, 'must not be empty');
  if (trimmed.length > MAX_REASON_LENGTH) throw new ValidationError(field, `must be at most ${MAX_REASON_LENGTH} characters`);
  if (trimmed.includes('\u0000')) throw new ValidationError(field, 'must not contain NUL characters');
  return trimmed;
}

/** A reason that may be absent; when given it follows the required-reason rules. */
export function optionalReason(reason: string | null | undefined): string | null {
  return reason === null || reason === undefined || reason.trim() === '' ? null : requiredReason(reason);
}
