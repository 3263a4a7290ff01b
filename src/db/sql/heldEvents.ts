// Held events: PENDING events the retry loop will not deliver until something changes, and why.
// The reasons follow the claim's own rules (claimDueDeadLetters.ts), in this order:
//  * PAUSED: the type's policy (its own, else '*') is paused; resuming the type releases them.
//  * NO_TARGET: that policy has no target and no in-process handler takes the type, and the event
//    was not requeued to its source (which needs no policy target); setting a target releases them.
//  * RELEASING: a ramped release parked it (parkRedriveItems.ts) until its redrive reaches it; the
//    redrive releases it at its rate, and a requeue releases it at once.
//  * BLOCKED_KEY: the type is ordered and the event's ordering key has an EXHAUSTED head; the head
//    being requeued, resolved or discarded releases them (or the type no longer being ordered).
// An event waiting for its backoff, or behind a key head that is still being retried, is not held.
import { Prisma } from '../../generated/prisma/client.ts';
import { blockedKeysSql } from './blockedKeys.ts';
import { deadLetterWhereSql } from './deadLetterWhere.ts';
import { RELEASE_PARKED_AT } from './parkRedriveItems.ts';
import { PENDING_TYPES, policyOf, UNFINISHED_STATUSES } from './policyOf.ts';
import type { Queryable } from './queryable.ts';
import { runSql } from '../runSql.ts';

export type HeldReason = 'PAUSED' | 'NO_TARGET' | 'RELEASING' | 'BLOCKED_KEY';

export interface HeldEvent {
  id: bigint;
  reason: HeldReason;
  /** The policy that holds it: the type's own, or '*'. */
  policyEventType: string;
  /** BLOCKED_KEY: the EXHAUSTED head of its ordering key. */
  headId: bigint | null;
}

export interface HeldCount {
  eventType: string;
  policyEventType: string;
  reason: HeldReason;
  count: number;
}

/** Of the events `ids`, those held and why (one statement; a key-head lookup only for ordered types). */
export async function findHeldEvents(db: Queryable, ids: readonly bigint[], inProcessEventTypes: readonly string[]): Promise<HeldEvent[]> {
  if (ids.length === 0) return [];
  const rows = await runSql<{ id: bigint; reason: HeldReason; policy_event_type: string; head_id: bigint | null }>(db, Prisma.sql`
    select x.id, x.reason, x.policy_event_type, x.head_id from (
      select s.id, e.event_type as policy_event_type,
             case when e.paused then 'PAUSED'
                  when e.target_kind is null and not s.event_type = any(${[...inProcessEventTypes]}::text[])
                       and s.deliver_to_source is not true then 'NO_TARGET'
                  when s.next_attempt_at >= ${RELEASE_PARKED_AT}::timestamptz then 'RELEASING'
                  when h.status = 'EXHAUSTED' then 'BLOCKED_KEY' end as reason,
             case when h.status = 'EXHAUSTED' then h.id end as head_id
        from dead_letter_states s
             cross join lateral ${policyOf('s.event_type')} e
             left join lateral (
               select o.id, o.status from dead_letter_states o
                where e.ordered and o.event_type = s.event_type and o.ordering_key = s.ordering_key
                  and o.status in ${UNFINISHED_STATUSES}
                order by coalesce(o.ordering_seq, -1), o.id limit 1) h on s.ordering_key is not null
       where s.id = any(${ids.map(String)}::bigint[]) and s.status = 'PENDING') x
     where x.reason is not null`);
  return rows.map((r) => ({ id: BigInt(r.id), reason: r.reason, policyEventType: r.policy_event_type, headId: r.head_id === null ? null : BigInt(r.head_id) }));
}

/**
 * Held events per event type and reason, most first. PAUSED and NO_TARGET count a type's PENDING
 * events (one descent of dead_letter_states_pending_type_idx per type with PENDING events, then a
 * count of the held types' entries); BLOCKED_KEY sums the events waiting behind EXHAUSTED heads
 * (blockedKeys.ts) of types not already held as a whole; RELEASING counts the parked end of each
 * other type's entries in the same index.
 */
export async function countHeldEvents(db: Queryable, inProcessEventTypes: readonly string[]): Promise<HeldCount[]> {
  const rows = await runSql<{ event_type: string; policy_event_type: string; reason: HeldReason; count: number }>(db, Prisma.sql`
    with recursive ${PENDING_TYPES},
    held_types as materialized (
      select t.event_type, e.event_type as policy_event_type,
             case when e.paused then 'PAUSED' else 'NO_TARGET' end as reason
        from pending_types t, lateral ${policyOf('t.event_type')} e
       where t.event_type is not null
         and (e.paused or (e.target_kind is null and not t.event_type = any(${[...inProcessEventTypes]}::text[])))),
    blocked as materialized (${blockedKeysSql(deadLetterWhereSql({}), 1_000_000)}),
    releasing as materialized (
      select t.event_type, (select count(*)::int from dead_letter_states d
                             where d.status = 'PENDING' and d.event_type = t.event_type
                               and d.next_attempt_at >= ${RELEASE_PARKED_AT}::timestamptz) as count
        from pending_types t
       where t.event_type is not null and t.event_type not in (select h.event_type from held_types h))
    select h.event_type, h.policy_event_type, h.reason,
           (select count(*)::int from dead_letter_states d
             where d.status = 'PENDING' and d.event_type = h.event_type
               and (h.reason <> 'NO_TARGET' or d.deliver_to_source is not true)) as count
      from held_types h
    union all
    select r.event_type, (select e.event_type from ${policyOf('r.event_type')} e), 'RELEASING', r.count
      from releasing r where r.count > 0
    union all
    select b."eventType", (select e.event_type from ${policyOf('b."eventType"')} e), 'BLOCKED_KEY', sum(b."heldBack")::int
      from blocked b
     where b."eventType" not in (select h.event_type from held_types h)
     group by b."eventType"
     order by count desc, event_type, reason`);
  return rows.map((r) => ({ eventType: r.event_type, policyEventType: r.policy_event_type, reason: r.reason, count: r.count }));
}
