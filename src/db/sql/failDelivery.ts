import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { jsonOrNull, type AttemptRecord } from './completeDelivery.ts';
import { holdsLease } from './renewLeases.ts';
import { stamp } from './stamp.ts';

export interface FailureRecord extends AttemptRecord {
  outcome: 'FAILED' | 'PERMANENT_FAILURE' | 'TIMED_OUT';
  errorMessage: string;
  /** Ends the event EXHAUSTED regardless of attempts left. */
  isPermanent: boolean;
  /** Wait before the next attempt, from the policy or the target's Retry-After. */
  delayMs: number;
  /** The policy's max attempts; the event's own max_attempts wins when set. */
  policyMaxAttempts: number;
  failureKind?: 'UNREACHABLE' | 'REJECTED' | 'TIMEOUT' | 'INVALID_TARGET' | null;
  /** Which rule made it permanent (with isPermanent); else the statement records MAX_ATTEMPTS when it ran out. */
  permanentRule?: 'PERMANENT_STATUS_CODE' | 'PERMANENT_ERROR_KIND' | 'PERMANENT_ERROR' | 'INVALID_TARGET' | null;
}

export type FailureResult = 'PENDING' | 'EXHAUSTED' | 'LEASE_LOST';

/**
 * Records failed attempts, in one statement, as completeDeliveries records successes: each event
 * goes back to PENDING at now() + its delay, or to EXHAUSTED when it is out of attempts or the
 * failure is permanent. Fenced by each lease token: an id missing from the result had lost its
 * lease (another worker owns the event now) and nothing was written for it.
 */
export async function failDeliveries(db: Db, records: readonly FailureRecord[]): Promise<Map<bigint, 'PENDING' | 'EXHAUSTED'>> {
  if (records.length === 0) return new Map();
  const column = <T>(pick: (r: FailureRecord) => T) => records.map(pick);
  const rows = await runSql<{ id: bigint; status: 'PENDING' | 'EXHAUSTED' }>(db, Prisma.sql`
    with input as (
      select * from unnest(${column((r) => r.id)}::bigint[], ${column((r) => r.leaseToken)}::uuid[],
                           ${column((r) => r.workerId)}::text[], ${column((r) => r.durationMs)}::int[],
                           ${column((r) => r.statusCode)}::int[], ${column((r) => r.responseBody)}::text[],
                           ${column((r) => r.outcome)}::text[], ${column((r) => r.errorMessage)}::text[],
                           ${column((r) => r.isPermanent)}::boolean[], ${column((r) => r.delayMs)}::bigint[],
                           ${column((r) => r.policyMaxAttempts)}::int[],
                           ${column((r) => r.failureKind ?? null)}::text[], ${column((r) => r.permanentRule ?? null)}::text[],
                           ${column((r) => r.target ?? null)}::text[], ${column((r) => jsonOrNull(r.requestHeaders))}::jsonb[],
                           ${column((r) => r.requestBodyBytes ?? null)}::int[], ${column((r) => r.requestBodySha256 ?? null)}::text[],
                           ${column((r) => jsonOrNull(r.responseHeaders))}::jsonb[], ${column((r) => r.responseBodyTruncated ?? null)}::boolean[])
               as i(id, token, worker_id, duration_ms, status_code, response_body, outcome, error_message,
                    is_permanent, delay_ms, policy_max_attempts, failure_kind, permanent_rule,
                    target, request_headers, request_body_bytes, request_body_sha256, response_headers, response_body_truncated)),
    failed as (
      -- max_attempts is written once, so it stays on dead_letters: read by primary key, never written.
      update dead_letter_states d
         set status = case when i.is_permanent or d.attempts >= coalesce(w.max_attempts, i.policy_max_attempts)
                           then 'EXHAUSTED' else 'PENDING' end::"DeadLetterStatus",
             next_attempt_at = case when i.is_permanent or d.attempts >= coalesce(w.max_attempts, i.policy_max_attempts)
                           then null else now() + i.delay_ms * interval '1 millisecond' end,
             lease_owner = null, lease_token = null, lease_expires_at = null, ${stamp('d')}
        from input i join dead_letters w on w.id = i.id
       where ${holdsLease('d', 'i')}
      returning d.id, d.attempts, d.status),
    attempt as (
      insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome, status_code, error_message, response_body,
                                     failure_kind, permanent_reason, target, request_headers, request_body_bytes, request_body_sha256,
                                     response_headers, response_body_truncated)
      select failed.id, failed.attempts, i.worker_id, now() - i.duration_ms * interval '1 millisecond',
             i.duration_ms, i.outcome::"AttemptOutcome", i.status_code, i.error_message, i.response_body,
             i.failure_kind::"DeliveryFailureKind",
             -- The rule the delivery named, else running out of attempts: the status set above.
             case when i.is_permanent then coalesce(i.permanent_rule, 'PERMANENT_ERROR')
                  when failed.status = 'EXHAUSTED' then 'MAX_ATTEMPTS' end::"PermanentReason",
             i.target, i.request_headers, i.request_body_bytes, i.request_body_sha256, i.response_headers, i.response_body_truncated
        from failed join input i on i.id = failed.id)
    select id, status::text as status from failed`, { name: 'fail_deliveries' });
  return new Map(rows.map((r) => [r.id, r.status]));
}

/** One event's failure: its new status, or 'LEASE_LOST' (nothing written). */
export async function failDelivery(db: Db, record: FailureRecord): Promise<FailureResult> {
  return (await failDeliveries(db, [record])).get(record.id) ?? 'LEASE_LOST';
}
