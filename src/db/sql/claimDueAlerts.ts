import type { AlertFormat, AlertTrigger } from '../../generated/prisma/enums.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface ClaimedAlert {
  id: bigint;
  /** The attempt this claim makes (1 for the first). */
  attempt: number;
  trigger: AlertTrigger;
  subject: string;
  summary: string;
  details: unknown;
  createdAt: Date;
  ruleId: bigint | null;
  ruleName: string;
  /** Null when the rule was deleted: the alert cannot be delivered. */
  channel: { targetUrl: string; format: AlertFormat; signingSecret: string; allowPrivateTarget: boolean } | null;
}

interface Row {
  id: bigint; attempts: number; trigger: AlertTrigger; subject: string; summary: string; details: unknown; created_at: Date;
  rule_id: bigint | null; rule_name: string; target_url: string | null; format: AlertFormat | null; signing_secret: string | null;
  allow_private_target: boolean | null;
}

/**
 * Leases up to `limit` due alerts (PENDING and due, or DELIVERING with an expired lease: a crashed
 * deliverer's) and counts the attempt. SKIP LOCKED, so deliverers in several processes never wait
 * on each other or claim the same alert; the claim commits at once and the delivery runs outside
 * any transaction. The rule's channel is read at claim time, so a retried alert goes to the
 * rule's current target and secret.
 */
export async function claimDueAlerts(db: Db, p: { owner: string; leaseSeconds: number; limit: number }): Promise<ClaimedAlert[]> {
  const rows = await runSql<Row>(db, Prisma.sql`
    with due as (
      select id from alerts
       where (delivery_status = 'PENDING' and next_attempt_at <= now())
          or (delivery_status = 'DELIVERING' and lease_expires_at < now())
       order by next_attempt_at, id
       limit ${p.limit}::int
       for update skip locked),
    claimed as (
      update alerts a
         set delivery_status = 'DELIVERING', attempts = a.attempts + 1, lease_owner = ${p.owner}::text,
             lease_expires_at = now() + ${p.leaseSeconds}::int * interval '1 second'
        from due where a.id = due.id
      returning a.*)
    select c.id, c.attempts, c.trigger, c.subject, c.summary, c.details, c.created_at, c.rule_id, c.rule_name,
           r.target_url, r.format, r.signing_secret, r.allow_private_target
      from claimed c left join alert_rules r on r.id = c.rule_id
     order by c.id`);
  return rows.map((r) => ({
    id: r.id, attempt: r.attempts, trigger: r.trigger, subject: r.subject, summary: r.summary, details: r.details,
    createdAt: r.created_at, ruleId: r.rule_id, ruleName: r.rule_name,
    channel: r.target_url === null ? null : {
      targetUrl: r.target_url, format: r.format!, signingSecret: r.signing_secret!, allowPrivateTarget: r.allow_private_target!,
    },
  }));
}
