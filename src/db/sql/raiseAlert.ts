import type { AlertTrigger } from '../../generated/prisma/enums.ts';
import type { Db, DbTx } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/**
 * Raises `trigger` for `subject` through lazarus_raise_alert() (migration 20261125134500_alerts),
 * in the transaction of `db` (a client or an interactive transaction): every enabled rule of the
 * trigger (or only `onlyRuleId`), at most once per rule, subject and window. Returns the ids raised.
 */
export async function raiseAlertRows(
  db: Db | DbTx,
  p: { trigger: AlertTrigger; subject: string; summary: string; details: unknown; onlyRuleId?: bigint | null },
): Promise<bigint[]> {
  const rows = await runSql<{ id: bigint }>(db, Prisma.sql`
    select lazarus_raise_alert(${p.trigger}::"AlertTrigger", ${p.subject}::text, ${p.summary}::text,
                               ${JSON.stringify(p.details ?? {})}::jsonb, ${p.onlyRuleId ?? null}::bigint) as id`);
  return rows.map((r) => r.id);
}
