// Error groups: operator moves between statuses, and the group key subscriptions match on.
//
// Statuses: OPEN → ACKNOWLEDGED (someone is on it) → RESOLVED (fixed), and IGNORED (counted,
// never alerted, never changed by the database). The folder (lazarus_fold_error_groups, migration
// 20261125130000_error_groups_ledger, run by domain/errorGroupFolding.ts) also moves groups: OPEN or
// ACKNOWLEDGED → RESOLVED when no member is unresolved, RESOLVED → OPEN on a new failure
// (regressed) or a member requeued. Each move, theirs or an operator's, is a history row with
// actor and reason.
import type { Db } from '../db/createDb.ts';
import { findErrorGroupStatus } from '../db/models/errorGroups.ts';
import type { DeadLetterFilter } from '../db/sql/deadLetterWhere.ts';
import type { ErrorGroupFilterSql } from '../db/sql/errorGroupPage.ts';
import type { ErrorGroup } from '../generated/prisma/client.ts';
import { setErrorGroupStatus } from '../db/sql/setErrorGroupStatus.ts';
import type { ErrorGroupStatus, ErrorKind } from '../generated/prisma/enums.ts';
import { ErrorGroupNotFoundError, InvalidErrorGroupTransitionError, ValidationError } from './errors.ts';

export const MAX_GROUP_REASON_LENGTH = 2000;
export const MAX_GROUP_NOTE_LENGTH = 2000;

export type ErrorGroupMove = 'ACKNOWLEDGE' | 'RESOLVE' | 'IGNORE' | 'REOPEN';

/** Where each move goes, and the statuses it is legal from (never from the status it sets). */
export const ERROR_GROUP_MOVES: Record<ErrorGroupMove, { to: ErrorGroupStatus; from: ErrorGroupStatus[] }> = {
  ACKNOWLEDGE: { to: 'ACKNOWLEDGED', from: ['OPEN'] },
  RESOLVE: { to: 'RESOLVED', from: ['OPEN', 'ACKNOWLEDGED', 'IGNORED'] },
  IGNORE: { to: 'IGNORED', from: ['OPEN', 'ACKNOWLEDGED', 'RESOLVED'] },
  REOPEN: { to: 'OPEN', from: ['ACKNOWLEDGED', 'RESOLVED', 'IGNORED'] },
};

export interface MoveErrorGroupOptions {
  id: bigint;
  move: ErrorGroupMove;
  reason: string | null;
  note: string | null;
}

/**
 * Moves a group to the move's status, recording actor, reason and note. NOT_FOUND for an unknown
 * id; CONFLICT (InvalidErrorGroupTransitionError) from a status the move is not legal from.
 * Members are untouched: act on them with the bulk mutations and `filter: { groupId }`.
 */
export async function moveErrorGroup(db: Db, actor: string, o: MoveErrorGroupOptions): Promise<void> {
  const reason = optionalText('reason', o.reason, MAX_GROUP_REASON_LENGTH);
  const note = optionalText('note', o.note, MAX_GROUP_NOTE_LENGTH);
  const { to, from } = ERROR_GROUP_MOVES[o.move];
  const moved = await setErrorGroupStatus(db, { id: o.id, to, allowed: from, actor, reason, note });
  if (moved !== null) return;
  const current = await findErrorGroupStatus(db, o.id);
  if (!current) throw new ErrorGroupNotFoundError(o.id);
  throw new InvalidErrorGroupTransitionError(o.id, current.status, to);
}

function optionalText(field: string, value: string | null, max: number): string | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (trimmed.length === 0) return null;
  if (trimmed.length > max) throw new ValidationError(field, `must be at most ${max} characters`);
  return trimmed;
}

/**
 * The filter that selects the group's members (narrowed by `filter`, whose own groupId is
 * replaced), for the bulk actions. NOT_FOUND for an unknown group: a group exists once the folder
 * has seen its first event.
 */
export async function errorGroupMembers(db: Db, id: bigint, filter: DeadLetterFilter = {}): Promise<DeadLetterFilter> {
  const group = await findErrorGroupStatus(db, id);
  if (!group) throw new ErrorGroupNotFoundError(id);
  return { ...filter, groupId: id };
}

/** The errorGroups filter evaluated in memory on one group, with the same meaning as its SQL. */
export function matchesErrorGroupFilter(g: ErrorGroup, f: ErrorGroupFilterSql): boolean {
  if (f.ids && !f.ids.includes(g.id)) return false;
  if (f.statuses && !f.statuses.includes(g.status)) return false;
  if (f.eventTypes && !f.eventTypes.includes(g.eventType)) return false;
  if (f.errorKinds && !f.errorKinds.includes(g.errorKind)) return false;
  if (f.queues && !f.queues.some((q) => g.queues.includes(q))) return false;
  if (f.sources && !f.sources.some((s) => g.sources.includes(s))) return false;
  if (f.signatureText !== undefined && !g.signature.toLowerCase().includes(f.signatureText.toLowerCase())) return false;
  if (f.lastSeen?.from && g.lastSeen.getTime() < f.lastSeen.from.getTime()) return false;
  if (f.lastSeen?.to && g.lastSeen.getTime() >= f.lastSeen.to.getTime()) return false;
  return true;
}
