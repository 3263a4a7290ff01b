// Ordering keys held back by their head, as the retry loop sees them: per (event type, ordering
// key) of an ordered type, the head — the first unfinished event by (coalesce(ordering_seq, -1),
// id) — is EXHAUSTED and unfinished events wait behind it. The filter applies to the head event.
// One index-only pass over dead_letter_states_live_key_idx finds every key's head and queue length (the
// window is ordered like the index, so neither it nor DISTINCT ON sorts).
import { Prisma } from '../../generated/prisma/client.ts';
import { policyOf, UNFINISHED_STATUSES } from './policyOf.ts';

export interface BlockedKeyRow {
  orderingKey: string;
  eventType: string;
  headId: bigint;
  heldBack: number;
}

export function blockedKeysSql(where: Prisma.Sql, limit: number): Prisma.Sql {
  return Prisma.sql`
    with heads as (
      select distinct on (l.event_type, l.ordering_key) l.id, l.event_type, l.ordering_key, l.status,
             count(*) over key_queue::int - 1 as held_back
        from dead_letter_states l
       where l.ordering_key is not null and l.status in ${UNFINISHED_STATUSES}
      window key_queue as (partition by l.event_type, l.ordering_key order by coalesce(l.ordering_seq, -1), l.id
                           rows between unbounded preceding and unbounded following)
       order by l.event_type, l.ordering_key, coalesce(l.ordering_seq, -1), l.id
    )
    select h.ordering_key as "orderingKey", h.event_type as "eventType", h.id as "headId", h.held_back as "heldBack"
      from heads h
      join lazarus_dead_letters d on d.id = h.id
     where h.status = 'EXHAUSTED' and h.held_back > 0 and (select e.ordered from ${policyOf('h.event_type')} e) and (${where})
     order by h.held_back desc, h.ordering_key, h.event_type
     limit ${limit}`;
}
