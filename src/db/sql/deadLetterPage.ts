// One page of dead letters by keyset: (sort key, id) strictly past the cursor, in the requested
// direction. Keyset (not OFFSET) keeps pages stable while rows are inserted: a cursor names a
// position in the order, not a row count.
import { Prisma } from '../../generated/prisma/client.ts';
import type { DeadLetter } from '../../generated/prisma/client.ts';
import { queryPg, toBigInts, type Db } from '../createDb.ts';

export type DeadLetterOrderField = 'CREATED_AT' | 'UPDATED_AT' | 'NEXT_ATTEMPT_AT' | 'ATTEMPTS';

// Whitelisted SQL for each order; `cast` turns the cursor's text back into the key's type.
const SORT_KEYS: Record<DeadLetterOrderField, { expr: string; cast: string }> = {
  CREATED_AT: { expr: 'd.created_at', cast: 'timestamptz' },
  UPDATED_AT: { expr: 'd.updated_at', cast: 'timestamptz' },
  // Matches the expression index of the read-side migration; rows with no next attempt sort last.
  NEXT_ATTEMPT_AT: { expr: "coalesce(d.next_attempt_at, 'infinity'::timestamptz)", cast: 'timestamptz' },
  ATTEMPTS: { expr: 'd.attempts', cast: 'int' },
};

export interface PageQuery {
  where: Prisma.Sql;
  field: DeadLetterOrderField;
  /** Direction of the rows as scanned (a backward page scans the reverse order). */
  descending: boolean;
  /** Position to start strictly after, in scan order. */
  after: { key: string; id: bigint } | null;
  limit: number;
  /**
   * Collect the matches first (a MATERIALIZED CTE, so the GIN indexes serve the filter) and sort
   * them, instead of walking the order's index. For filters known to match few rows.
   */
  materialize?: boolean;
  /** Which large columns to read; the others come back null (the query did not select them). */
  heavy?: { payload: boolean; headers: boolean; stack: boolean };
}

export type DeadLetterPageRow = DeadLetter & { sortKey: string };

export function deadLetterPageSql(q: PageQuery): Prisma.Sql {
  const key = SORT_KEYS[q.field];
  const expr = Prisma.raw(key.expr);
  const dir = Prisma.raw(q.descending ? 'desc' : 'asc');
  const past = q.after
    ? Prisma.sql`and (${expr}, d.id) ${Prisma.raw(q.descending ? '<' : '>')} (${q.after.key}::${Prisma.raw(key.cast)}, ${q.after.id.toString()}::bigint)`
    : Prisma.empty;
  const heavy = q.heavy ?? { payload: true, headers: true, stack: true };
  const col = (wanted: boolean, sql: string, alias: string) => Prisma.raw(wanted ? `${sql} as "${alias}"` : `null as "${alias}"`);
  const head = q.materialize ? Prisma.sql`with m as materialized (select * from dead_letters d where ${q.where})` : Prisma.empty;
  return Prisma.sql`${head}
    select d.id, d.event_type as "eventType", d.queue, d.source, d.ordering_key as "orderingKey",
           d.ordering_seq as "orderingSeq", d.dedupe_key as "dedupeKey", ${col(heavy.payload, 'd.payload', 'payload')},
           ${col(heavy.headers, 'd.headers', 'headers')},
           d.error_kind::text as "errorKind", d.error_message as "errorMessage", ${col(heavy.stack, 'd.error_stack', 'errorStack')},
           d.error_signature as "errorSignature", d.status::text as status, d.attempts, d.max_attempts as "maxAttempts",
           d.next_attempt_at as "nextAttemptAt", d.lease_owner as "leaseOwner", d.lease_token::text as "leaseToken",
           d.lease_expires_at as "leaseExpiresAt", d.resolved_at as "resolvedAt", d.resolved_by as "resolvedBy",
           d.resolution_reason as "resolutionReason", d.occurred_at as "occurredAt", d.created_at as "createdAt",
           d.updated_at as "updatedAt", d.version, d.change_id as "changeId", (${expr})::text as "sortKey"
      from ${q.materialize ? Prisma.sql`(select * from m)` : Prisma.sql`dead_letters`} d
     where (${q.materialize ? Prisma.sql`true` : q.where}) ${past}
     order by ${expr} ${dir}, d.id ${dir}
     limit ${q.limit}`;
}

/** One page, on pg directly: the API's most frequent query, where Prisma's result decoding showed. */
export async function readDeadLetterPage(db: Db, q: PageQuery): Promise<DeadLetterPageRow[]> {
  const rows = await queryPg(db, deadLetterPageSql(q));
  return rows.map((row) => toBigInts<DeadLetterPageRow>(row, ['id', 'orderingSeq', 'changeId']));
}
