import type { Db } from '../createDb.ts';
import type { AttemptRecord } from './completeDelivery.ts';

export interface FailureRecord extends AttemptRecord {
  outcome: 'FAILED' | 'PERMANENT_FAILURE' | 'TIMED_OUT';
  errorMessage: string;
  /** Ends the event EXHAUSTED regardless of attempts left. */
  isPermanent: boolean;
  /** Wait before the next attempt, from the policy or the target's Retry-After. */
  delayMs: number;
  /** The policy's max attempts; the event's own max_attempts wins when set. */
  policyMaxAttempts: number;
}

export type FailureResult = 'PENDING' | 'EXHAUSTED' | 'LEASE_LOST';

/**
 * Records a failed attempt and moves the event back to PENDING at now() + delay, or to
 * EXHAUSTED when it is out of attempts or the failure is permanent. Fenced by the lease token;
 * 'LEASE_LOST' means another worker owns the event now and nothing was written.
 */
export async function failDelivery(db: Db, f: FailureRecord): Promise<FailureResult> {
  const rows = await db.$queryRaw<{ status: 'PENDING' | 'EXHAUSTED' }[]>`
    with failed as (
      update dead_letters d
         set status = case when ${f.isPermanent}::boolean or d.attempts >= coalesce(d.max_attempts, ${f.policyMaxAttempts}::int)
                           then 'EXHAUSTED' else 'PENDING' end::"DeadLetterStatus",
             next_attempt_at = case when ${f.isPermanent}::boolean or d.attempts >= coalesce(d.max_attempts, ${f.policyMaxAttempts}::int)
                           then null else now() + ${f.delayMs}::bigint * interval '1 millisecond' end,
             lease_owner = null, lease_token = null, lease_expires_at = null
       where d.id = ${f.id}::bigint and d.lease_token = ${f.leaseToken}::uuid and d.status = 'PROCESSING'
      returning d.id, d.attempts, d.status),
    attempt as (
      insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome, status_code, error_message, response_body)
      select id, attempts, ${f.workerId}::text, now() - ${f.durationMs}::int * interval '1 millisecond',
             ${f.durationMs}::int, ${f.outcome}::"AttemptOutcome", ${f.statusCode}::int, ${f.errorMessage}::text, ${f.responseBody}::text
        from failed)
    select status::text as status from failed`;
  return rows[0]?.status ?? 'LEASE_LOST';
}
