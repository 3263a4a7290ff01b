import type { Db } from '../createDb.ts';
import type { RedriveStatus } from '../../generated/prisma/enums.ts';

/**
 * Moves a redrive from one of `from` to `to`; `status` is the one it had (null: no such redrive).
 * Moving to FAILED records `error`; moving back to RUNNING clears it.
 */
export async function setRedriveStatus(
  db: Db,
  p: { id: bigint; from: RedriveStatus[]; to: RedriveStatus; error?: string },
): Promise<{ status: RedriveStatus | null; changed: boolean }> {
  const [row] = await db.$queryRaw<{ status: RedriveStatus; changed: boolean }[]>`
    with current as (select id, status from redrives where id = ${p.id.toString()}::bigint),
    changed as (
      update redrives r
         set status = ${p.to}::"RedriveStatus",
             finished_at = case when ${p.to}::text in ('CANCELLED', 'COMPLETED', 'FAILED') then now() else null end,
             error = case ${p.to}::text when 'FAILED' then ${p.error ?? null}::text when 'RUNNING' then null else r.error end,
             lease_owner = null, lease_expires_at = null, updated_at = now()
        from current c
       where r.id = c.id and r.status::text = any(${p.from}::text[])
      returning r.id)
    select c.status, exists (select 1 from changed) as changed from current c`;
  return row ?? { status: null, changed: false };
}
