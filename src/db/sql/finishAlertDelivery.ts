import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export type AlertDeliveryOutcome =
  | { kind: 'DELIVERED'; statusCode: number | null }
  | { kind: 'RETRY'; error: string; statusCode: number | null; delayMs: number }
  | { kind: 'FAILED'; error: string; statusCode: number | null };

/**
 * Records one delivery's outcome, only while `owner` still holds the alert's lease (a deliverer
 * whose lease ran out cannot overwrite a newer result). Returns false when the lease was lost.
 */
export async function finishAlertDelivery(db: Db, p: { id: bigint; owner: string; outcome: AlertDeliveryOutcome }): Promise<boolean> {
  const o = p.outcome;
  const status = o.kind === 'RETRY' ? 'PENDING' : o.kind;
  const error = o.kind === 'DELIVERED' ? null : o.error;
  const delayMs = o.kind === 'RETRY' ? Math.round(o.delayMs) : 0;
  const rows = await runSql<{ id: bigint }>(db, Prisma.sql`
    update alerts
       set delivery_status = ${status}::"AlertDeliveryStatus", lease_owner = null, lease_expires_at = null,
           last_error = ${error}::text, last_status_code = ${o.statusCode}::int,
           delivered_at = case when ${status}::text = 'DELIVERED' then now() end,
           next_attempt_at = now() + ${delayMs}::int * interval '1 millisecond'
     where id = ${p.id}::bigint and lease_owner = ${p.owner}::text and delivery_status = 'DELIVERING'
    returning id`);
  return rows.length === 1;
}
