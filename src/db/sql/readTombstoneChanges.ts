import type { DeadLetterTombstone } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { changesSql, readChanges, type ChangeRange, type ChangeRows } from './readDeadLetterChanges.ts';

export type TombstoneChangeRow = Omit<DeadLetterTombstone, 'changeXid'> & { changeXid: string };

// Raw because Prisma cannot compare xid8 or rows. Walks dead_letter_tombstones_change_cursor_idx.
const TOMBSTONE_CHANGES = changesSql(`
  id, event_type as "eventType", queue, source, ordering_key as "orderingKey", error_kind::text as "errorKind",
  status::text as status, error_signature as "errorSignature", error_group_id as "errorGroupId", attempts, created_at as "createdAt",
  updated_at as "updatedAt", next_attempt_at as "nextAttemptAt", deleted_at as "deletedAt",
  change_id as "changeId", change_xid::text as "changeXid"`, 'dead_letter_tombstones');

/** Deletions after the cursor, below the horizon, in cursor order (migration 20261124110000). */
export async function readTombstoneChanges(db: Db, r: ChangeRange): Promise<ChangeRows<TombstoneChangeRow>> {
  return readChanges(db, 'tombstone_changes', TOMBSTONE_CHANGES, r);
}
