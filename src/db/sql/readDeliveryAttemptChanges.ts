import type { DeliveryAttempt } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { changesSql, readChanges, type ChangeRange, type ChangeRows } from './readDeadLetterChanges.ts';

export type DeliveryAttemptChangeRow = Omit<DeliveryAttempt, 'changeXid'> & { changeXid: string };

// Raw because Prisma cannot compare xid8 or rows. Walks delivery_attempts_change_cursor_idx.
const ATTEMPT_CHANGES = changesSql(`
  id, dead_letter_id as "deadLetterId", attempt_number as "attemptNumber", worker_id as "workerId",
  started_at as "startedAt", finished_at as "finishedAt", duration_ms as "durationMs",
  outcome::text as outcome, status_code as "statusCode", error_message as "errorMessage",
  response_body as "responseBody", failure_kind::text as "failureKind", permanent_reason::text as "permanentReason",
  target, request_headers as "requestHeaders", request_body_bytes as "requestBodyBytes",
  request_body_sha256 as "requestBodySha256", response_headers as "responseHeaders",
  response_body_truncated as "responseBodyTruncated", change_id as "changeId", change_xid::text as "changeXid"`, 'delivery_attempts');

export async function readDeliveryAttemptChanges(db: Db, r: ChangeRange): Promise<ChangeRows<DeliveryAttemptChangeRow>> {
  return readChanges(db, 'attempt_changes', ATTEMPT_CHANGES, r);
}
