import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/**
 * Queues a test alert for rule `ruleId` (subject `test`, the rule's trigger), outside the throttle
 * and whether or not the rule is enabled, and wakes the deliverers on lazarus_alerts (the channel
 * of ALERTS_CHANNEL in src/live/channels.ts) at commit. Raw for the NOTIFY; one statement, so a
 * rule deleted meanwhile inserts nothing. Returns the alert's id, or null when there is no such rule.
 */
export async function insertTestAlert(db: Db, p: { ruleId: bigint; summary: string; details: Record<string, unknown> }): Promise<bigint | null> {
  const rows = await runSql<{ id: bigint }>(db, Prisma.sql`
    with inserted as (
      insert into alerts (rule_id, rule_name, "trigger", subject, summary, details)
      select id, name, "trigger", 'test', ${p.summary}::text, ${JSON.stringify(p.details)}::jsonb
        from alert_rules where id = ${p.ruleId}::bigint
      returning id)
    select i.id from inserted i cross join lateral (select pg_notify('lazarus_alerts', '')) wake`);
  return rows[0]?.id ?? null;
}
