import type { Db } from '../createDb.ts';
import type { TransformStatus } from '../../generated/prisma/enums.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/**
 * RUNNING | APPLIED | FAILED → UNDOING, leased to `owner` (the request, which may run the first
 * batch) on the database's clock. The update waits for an apply batch in flight (it holds the row
 * lock), so the history the undo reads is complete. Returns the status the transform had (null: no
 * such transform), whether it moved, and how many events it changed.
 */
export async function startTransformUndo(
  db: Db,
  p: { id: bigint; actor: string; reason: string | null; owner: string; leaseSeconds: number },
): Promise<{ status: TransformStatus | null; started: boolean; changed: number }> {
  const [row] = await runSql<{ status: TransformStatus; started: boolean; changed: number }>(db, Prisma.sql`
    with started as (
      update transforms
         set status = 'UNDOING', undone_by = ${p.actor}::text, undo_reason = ${p.reason}::text, error = null,
             lease_owner = ${p.owner}::text, lease_expires_at = now() + ${p.leaseSeconds}::int * interval '1 second', updated_at = now()
       where id = ${p.id.toString()}::bigint and status in ('RUNNING', 'APPLIED', 'FAILED')
      returning id, changed)
    select t.status, exists (select 1 from started) as started, coalesce((select changed from started), t.changed) as changed
      from transforms t where t.id = ${p.id.toString()}::bigint`);
  return row ?? { status: null, started: false, changed: 0 };
}
