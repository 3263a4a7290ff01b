import type { Db } from '../createDb.ts';
import type { RedriveActionKind, RedrivePausedBy, RedriveStatus } from '../../generated/prisma/enums.ts';
import { redriveLimitsJson } from './redriveLimitsJson.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface RedriveStatusChange {
  id: bigint;
  from: RedriveStatus[];
  to: Exclude<RedriveStatus, 'COMPLETED'>;
  actor: string;
  reason?: string | null;
  /** Moving to FAILED records it in `error`; moving back to RUNNING clears it. */
  error?: string;
  /** Moving to PAUSED: who paused it (the reason goes to paused_reason). */
  pausedBy?: RedrivePausedBy;
  /** Only if this runner still holds the lease (the guard pausing its own redrive). */
  owner?: string;
  /** Moving to RUNNING: the limits from now on (the ramp and the guard's window restart). */
  limits?: { startRatePerSecond: number; maxRatePerSecond: number; rampSeconds: number; pauseWhenFailureRateAbove: number | null; windowSize: number; batchSize: number };
  /** Merged into the history row's `after` (e.g. the guard's window). */
  detail?: Record<string, unknown>;
}

const ACTION: Record<RedriveStatusChange['to'], RedriveActionKind> = { RUNNING: 'RESUMED', PAUSED: 'PAUSED', CANCELLED: 'CANCELLED', FAILED: 'FAILED' };

/**
 * Moves a redrive from one of `from` to `to` and records it in redrive_actions (status and limits
 * before and after), in one statement; `status` is the one it had (null: no such redrive).
 */
export async function setRedriveStatus(db: Db, p: RedriveStatusChange): Promise<{ status: RedriveStatus | null; changed: boolean }> {
  const l = p.limits ?? null;
  const detail = JSON.stringify(p.detail ?? {}, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  const [row] = await runSql<{ status: RedriveStatus; changed: boolean }>(db, Prisma.sql`
    with current as (
      select c.id, c.status, ${redriveLimitsJson('c')} || jsonb_build_object('status', c.status) as before
        from redrives c where c.id = ${p.id.toString()}::bigint),
    changed as (
      update redrives r
         set status = ${p.to}::"RedriveStatus",
             finished_at = case when ${p.to}::text in ('CANCELLED', 'FAILED') then now() else null end,
             error = case ${p.to}::text when 'FAILED' then ${p.error ?? null}::text when 'RUNNING' then null else r.error end,
             paused_by = case when ${p.to}::text = 'PAUSED' then ${p.pausedBy ?? 'OPERATOR'}::"RedrivePausedBy" end,
             paused_reason = case when ${p.to}::text = 'PAUSED' then ${p.reason ?? null}::text end,
             ramp_started_at = case when ${p.to}::text = 'RUNNING' then now() else r.ramp_started_at end,
             guard_after_attempt_id = case when ${p.to}::text = 'RUNNING' then (select coalesce(max(id), 0) from delivery_attempts)
                                           else r.guard_after_attempt_id end,
             start_rate_per_second = coalesce(${l?.startRatePerSecond ?? null}::int, r.start_rate_per_second),
             rate_per_second = coalesce(${l?.maxRatePerSecond ?? null}::int, r.rate_per_second),
             ramp_seconds = coalesce(${l?.rampSeconds ?? null}::int, r.ramp_seconds),
             pause_when_failure_rate_above = case when ${l !== null}::boolean then ${l?.pauseWhenFailureRateAbove ?? null}::float8
                                                  else r.pause_when_failure_rate_above end,
             window_size = coalesce(${l?.windowSize ?? null}::int, r.window_size),
             batch_size = coalesce(${l?.batchSize ?? null}::int, r.batch_size),
             lease_owner = null, lease_expires_at = null, updated_at = now()
        from current c
       where r.id = c.id and r.status::text = any(${p.from}::text[])
         and (${p.owner ?? null}::text is null or r.lease_owner = ${p.owner ?? null}::text)
      returning r.*),
    history as (
      insert into redrive_actions (redrive_id, action, actor, reason, before, after)
      select r.id, ${ACTION[p.to]}::"RedriveActionKind", ${p.actor}::text, coalesce(${p.reason ?? null}::text, r.error), c.before,
             ${redriveLimitsJson('r')} || jsonb_build_object('status', r.status) || ${detail}::jsonb
        from changed r, current c)
    select c.status, exists (select 1 from changed) as changed from current c`);
  return row ?? { status: null, changed: false };
}
