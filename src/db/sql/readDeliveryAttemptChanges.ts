import type { DeliveryAttempt } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { changeHorizonSql } from './changeHorizon.ts';
import { splitHorizon, type ChangeRange, type ChangeRows } from './readDeadLetterChanges.ts';

export type DeliveryAttemptChangeRow = Omit<DeliveryAttempt, 'changeXid'> & { changeXid: string };

// Raw because Prisma cannot compare xid8 or rows. Walks delivery_attempts_change_cursor_idx.
export async function readDeliveryAttemptChanges(db: Db, r: ChangeRange): Promise<ChangeRows<DeliveryAttemptChangeRow>> {
  const rows = await db.$queryRaw<(Partial<DeliveryAttemptChangeRow> & { horizon: string })[]>`
    select h.horizon::text as "horizon", c.*
      from ${changeHorizonSql} h
      left join lateral (
        select a.id, a.dead_letter_id as "deadLetterId", a.attempt_number as "attemptNumber", a.worker_id as "workerId",
               a.started_at as "startedAt", a.finished_at as "finishedAt", a.duration_ms as "durationMs",
               a.outcome::text as outcome, a.status_code as "statusCode", a.error_message as "errorMessage",
               a.response_body as "responseBody", a.change_id as "changeId", a.change_xid::text as "changeXid"
          from delivery_attempts a
         where (a.change_xid, a.change_id) > (${r.afterXid.toString()}::text::xid8, ${r.afterChangeId}::bigint)
           and a.change_xid < h.horizon
         order by a.change_xid, a.change_id
         limit ${r.limit}::int) c on true`;
  return splitHorizon(rows);
}
