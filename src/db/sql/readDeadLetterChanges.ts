import { Prisma, type DeadLetter } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { CHANGE_HORIZON_SQL } from './changeHorizon.ts';

export interface ChangeRange {
  /** Exclusive lower bound (change_xid, change_id). */
  afterXid: bigint;
  afterChangeId: bigint;
  limit: number;
}

/** Rows in cursor order, all stamped below `horizon` (see changeHorizon.ts). */
export interface ChangeRows<T> {
  horizon: bigint;
  rows: T[];
}

type WithHorizon<T> = Partial<T> & { horizon: string };

/** The statement returns one row with null columns when nothing changed, so the horizon always comes back. */
function splitHorizon<T extends { id: bigint }>(rows: WithHorizon<T>[]): ChangeRows<T> {
  const horizon = BigInt(rows[0]!.horizon);
  const data = rows.filter((row) => row.id != null).map(({ horizon: _h, ...row }) => row as unknown as T);
  return { horizon, rows: data };
}

export type DeadLetterChangeRow = Omit<DeadLetter, 'changeXid'> & { changeXid: string };

/**
 * The change reads run after every hint, prepared (see runSql): the text is fixed per `columns` and
 * `table`, with `$1` xid, `$2` change id, `$3` limit.
 */
export function changesSql(columns: string, table: string): (r: ChangeRange) => Prisma.Sql {
  const [horizon, select, from] = [Prisma.raw(CHANGE_HORIZON_SQL), Prisma.raw(columns), Prisma.raw(table)];
  return (r) => Prisma.sql`
    select h.horizon::text as "horizon", c.*
      from ${horizon} h
      left join lateral (
        select ${select}
          from ${from}
         where (change_xid, change_id) > (${r.afterXid.toString()}::text::xid8, ${r.afterChangeId.toString()}::bigint) and change_xid < h.horizon
         order by change_xid, change_id
         limit ${r.limit}::int) c on true`;
}

// Raw because Prisma cannot compare xid8 or rows. Walks dead_letter_states_change_cursor_idx (joining dead_letters by primary key). The
// horizon is read in the same statement (see changeHorizon.ts for why rows above it wait).
const DEAD_LETTER_CHANGES = changesSql(`
  id, event_type as "eventType", queue, source, ordering_key as "orderingKey",
  ordering_seq as "orderingSeq", dedupe_key as "dedupeKey", payload, headers, origin,
  error_kind::text as "errorKind", error_message as "errorMessage", error_stack as "errorStack",
  error_signature as "errorSignature", fingerprint, error_group_id as "errorGroupId", status::text as status, attempts, max_attempts as "maxAttempts",
  next_attempt_at as "nextAttemptAt", lease_owner as "leaseOwner", lease_token::text as "leaseToken",
  lease_expires_at as "leaseExpiresAt", resolved_at as "resolvedAt", resolved_by as "resolvedBy",
  resolution_reason as "resolutionReason", occurred_at as "occurredAt", created_at as "createdAt",
  updated_at as "updatedAt", version, delivery_generation as "deliveryGeneration", change_id as "changeId", change_xid::text as "changeXid"`, 'dead_letters_current');

export async function readDeadLetterChanges(db: Db, r: ChangeRange): Promise<ChangeRows<DeadLetterChangeRow>> {
  return readChanges(db, 'dead_letter_changes', DEAD_LETTER_CHANGES, r);
}

/** Runs a statement made by changesSql, prepared as `name`. */
export async function readChanges<T extends { id: bigint }>(
  db: Db, name: string, sql: (r: ChangeRange) => Prisma.Sql, r: ChangeRange,
): Promise<ChangeRows<T>> {
  return splitHorizon(await runSql<WithHorizon<T>>(db, sql(r), { name }));
}
