import type { DeadLetter } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { changeHorizonSql } from './changeHorizon.ts';

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
export function splitHorizon<T extends { id: bigint }>(rows: WithHorizon<T>[]): ChangeRows<T> {
  const horizon = BigInt(rows[0]!.horizon);
  const data = rows.filter((row) => row.id != null).map(({ horizon: _h, ...row }) => row as unknown as T);
  return { horizon, rows: data };
}

export type DeadLetterChangeRow = Omit<DeadLetter, 'changeXid'> & { changeXid: string };

// Raw because Prisma cannot compare xid8 or rows. Walks dead_letters_change_cursor_idx. The
// horizon is read in the same statement (see changeHorizon.ts for why rows above it wait).
export async function readDeadLetterChanges(db: Db, r: ChangeRange): Promise<ChangeRows<DeadLetterChangeRow>> {
  const rows = await db.$queryRaw<WithHorizon<DeadLetterChangeRow>[]>`
    select h.horizon::text as "horizon", c.*
      from ${changeHorizonSql} h
      left join lateral (
        select d.id, d.event_type as "eventType", d.queue, d.source, d.ordering_key as "orderingKey",
               d.ordering_seq as "orderingSeq", d.dedupe_key as "dedupeKey", d.payload, d.headers,
               d.error_kind::text as "errorKind", d.error_message as "errorMessage", d.error_stack as "errorStack",
               d.error_signature as "errorSignature",
               d.status::text as status, d.attempts, d.max_attempts as "maxAttempts",
               d.next_attempt_at as "nextAttemptAt", d.lease_owner as "leaseOwner", d.lease_token::text as "leaseToken",
               d.lease_expires_at as "leaseExpiresAt", d.resolved_at as "resolvedAt", d.resolved_by as "resolvedBy",
               d.resolution_reason as "resolutionReason", d.occurred_at as "occurredAt", d.created_at as "createdAt",
               d.updated_at as "updatedAt", d.version, d.change_id as "changeId", d.change_xid::text as "changeXid"
          from dead_letters d
         where (d.change_xid, d.change_id) > (${r.afterXid.toString()}::text::xid8, ${r.afterChangeId}::bigint)
           and d.change_xid < h.horizon
         order by d.change_xid, d.change_id
         limit ${r.limit}::int) c on true`;
  return splitHorizon(rows);
}
