// Ordering keys held back by their head, as the retry loop sees them: per (event type, ordering
// key) of an ordered type, the head — the first unfinished event by (coalesce(ordering_seq, -1),
// id) — is EXHAUSTED and unfinished events wait behind it. The filter applies to the head event.
// Everything is read from dead_letter_states_live_key_idx, index-only:
//  * the event types that have keyed unfinished events, one descent each, and of those the ordered ones;
//  * each key's head, one descent per key (a skip scan), and for an EXHAUSTED head that matches the
//    filter the length of its queue (a count over the key's entries);
//  * unless there are more keys than 100 and than 1 in 128 of the index's entries: then few events
//    wait per key, and one pass over the ordered types' entries (a window over each key) is cheaper.
//    At 10M rows a walk's step took 0.12 ms and the pass 0.7-1 us per entry, so a step costs about
//    128 entries; the walk stops at that many keys, and costs at most about as much as the pass.
// At 10M rows (~517,000 keyed unfinished events in a few hundred keys, 75 of an ordered type), the
// pass over all keys' entries took 358-519 ms on a loaded machine and the walk 5-13 ms
// (docs/benchmarks.md, "Session 16").
import { Prisma } from '../../generated/prisma/client.ts';
import { policyOf, UNFINISHED_STATUSES } from './policyOf.ts';

export interface BlockedKeyRow {
  orderingKey: string;
  eventType: string;
  headId: bigint;
  heldBack: number;
}

/** The predicate of dead_letter_states_live_key_idx, over `l`: every query here must repeat it to use the index. */
const LIVE = Prisma.sql`l.ordering_key is not null and l.status in ${UNFINISHED_STATUSES}`;
const KEY_ORDER = Prisma.sql`l.event_type, l.ordering_key, coalesce(l.ordering_seq, -1), l.id`;

/** `maxWalkedKeys` replaces the walk's limit (tests take each path with it). */
export function blockedKeysSql(where: Prisma.Sql, limit: number, maxWalkedKeys?: number): Prisma.Sql {
  const cap = maxWalkedKeys === undefined
    ? Prisma.sql`select greatest(100, c.reltuples / 128)::int as keys from pg_class c where c.oid = 'dead_letter_states_live_key_idx'::regclass`
    : Prisma.sql`select ${maxWalkedKeys}::int as keys`;
  return Prisma.sql`
    with recursive types as (
      (select l.event_type from dead_letter_states l where ${LIVE} order by l.event_type limit 1)
      union all
      select (select l.event_type from dead_letter_states l where ${LIVE} and l.event_type > t.event_type order by l.event_type limit 1)
        from types t where t.event_type is not null
    ), ordered as materialized (
      select t.event_type from types t where t.event_type is not null and (select e.ordered from ${policyOf('t.event_type')} e)
    ), cap as materialized (${cap}
    ), walk as materialized (
      select k.* from ordered o cross join lateral (
        with recursive keys as (
          (select l.id, l.event_type, l.ordering_key, l.status from dead_letter_states l
            where ${LIVE} and l.event_type = o.event_type order by ${KEY_ORDER} limit 1)
          union all
          select n.* from keys k cross join lateral (
            select l.id, l.event_type, l.ordering_key, l.status from dead_letter_states l
             where ${LIVE} and l.event_type = k.event_type and l.ordering_key > k.ordering_key order by ${KEY_ORDER} limit 1) n
        ) select * from keys) k
      limit (select keys from cap) + 1
    ), heads as (
      select w.id, w.event_type, w.ordering_key, null::int as held_back
        from walk w
       where w.status = 'EXHAUSTED' and (select count(*) from walk) <= (select keys from cap)
      union all
      select p.id, p.event_type, p.ordering_key, p.held_back
        from (select distinct on (l.event_type, l.ordering_key) l.id, l.event_type, l.ordering_key, l.status,
                     count(*) over key_queue::int - 1 as held_back
                from dead_letter_states l
               where ${LIVE} and l.event_type in (select o.event_type from ordered o)
              window key_queue as (partition by l.event_type, l.ordering_key order by coalesce(l.ordering_seq, -1), l.id
                                   rows between unbounded preceding and unbounded following)
               order by ${KEY_ORDER}) p
       where p.status = 'EXHAUSTED' and (select count(*) from walk) > (select keys from cap)
    ), matching as materialized (
      select h.id, h.event_type, h.ordering_key,
             coalesce(h.held_back, (select count(*)::int - 1 from dead_letter_states l
                                     where ${LIVE} and l.event_type = h.event_type and l.ordering_key = h.ordering_key)) as held_back
        from heads h
        join dead_letters_current d on d.id = h.id
       where (${where})
    )
    select h.ordering_key as "orderingKey", h.event_type as "eventType", h.id as "headId", h.held_back as "heldBack"
      from matching h
     where h.held_back > 0
     order by h.held_back desc, h.ordering_key, h.event_type
     limit ${limit}`;
}
