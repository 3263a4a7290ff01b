import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { holdsLease } from './renewLeases.ts';
import { stamp } from './stamp.ts';

export interface AttemptRecord {
  id: bigint;
  /** The fencing token from the claim; the write happens only while it still holds the lease. */
  leaseToken: string;
  workerId: string;
  durationMs: number;
  statusCode: number | null;
  responseBody: string | null;
  /** The request and response details, already bounded and redacted (domain/attemptDetails.ts); absent is NULL. */
  target?: string | null;
  requestHeaders?: Record<string, string> | null;
  requestBodyBytes?: number | null;
  requestBodySha256?: string | null;
  responseHeaders?: Record<string, string> | null;
  responseBodyTruncated?: boolean | null;
}

/** jsonb[] parameters go as JSON texts. */
export const jsonOrNull = (value: object | null | undefined): string | null => (value == null ? null : JSON.stringify(value));

/**
 * Marks delivered events SUCCEEDED and records their attempts, in one statement, only where
 * the lease (token) is still held. Returns the ids written; the others had lost their lease.
 */
export async function completeDeliveries(db: Db, records: readonly AttemptRecord[]): Promise<Set<bigint>> {
  if (records.length === 0) return new Set();
  const rows = await runSql<{ id: bigint }>(db, Prisma.sql`
    with input as (
      select * from unnest(${records.map((r) => r.id)}::bigint[], ${records.map((r) => r.leaseToken)}::uuid[],
                           ${records.map((r) => r.workerId)}::text[], ${records.map((r) => r.durationMs)}::int[],
                           ${records.map((r) => r.statusCode)}::int[], ${records.map((r) => r.responseBody)}::text[],
                           ${records.map((r) => r.target ?? null)}::text[], ${records.map((r) => jsonOrNull(r.requestHeaders))}::jsonb[],
                           ${records.map((r) => r.requestBodyBytes ?? null)}::int[], ${records.map((r) => r.requestBodySha256 ?? null)}::text[],
                           ${records.map((r) => jsonOrNull(r.responseHeaders))}::jsonb[], ${records.map((r) => r.responseBodyTruncated ?? null)}::boolean[])
               as i(id, token, worker_id, duration_ms, status_code, response_body,
                    target, request_headers, request_body_bytes, request_body_sha256, response_headers, response_body_truncated)),
    done as (
      update dead_letter_states d
         set status = 'SUCCEEDED', next_attempt_at = null, resolved_at = now(),
             lease_owner = null, lease_token = null, lease_expires_at = null, ${stamp('d')}
        from input i
       where ${holdsLease('d', 'i')}
      returning d.id, d.attempts),
    attempt as (
      insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome, status_code, response_body,
                                     target, request_headers, request_body_bytes, request_body_sha256, response_headers, response_body_truncated)
      select done.id, done.attempts, i.worker_id, now() - i.duration_ms * interval '1 millisecond',
             i.duration_ms, 'SUCCEEDED', i.status_code, i.response_body,
             i.target, i.request_headers, i.request_body_bytes, i.request_body_sha256, i.response_headers, i.response_body_truncated
        from done join input i on i.id = done.id)
    select id from done`, { name: 'complete_deliveries' });
  return new Set(rows.map((r) => r.id));
}

/** One event's success; false when the lease was lost (nothing written). */
export async function completeDelivery(db: Db, record: AttemptRecord): Promise<boolean> {
  return (await completeDeliveries(db, [record])).has(record.id);
}
