// Ordering keys whose head — the first unfinished event by (ordering_seq, id) — is EXHAUSTED and
// holds later unfinished events back. The filter applies to the head event.
import { Prisma } from '../../generated/prisma/client.ts';

export interface BlockedKeyRow {
  orderingKey: string;
  headId: bigint;
  heldBack: number;
}

export function blockedKeysSql(where: Prisma.Sql, limit: number): Prisma.Sql {
  return Prisma.sql`
    with live as (
      select id, ordering_key, ordering_seq, status from dead_letters
       where ordering_key is not null and status not in ('SUCCEEDED', 'RESOLVED', 'DISCARDED')
    ), heads as (
      select distinct on (ordering_key) id, ordering_key, status from live order by ordering_key, ordering_seq, id
    ), blocked as (
      select h.ordering_key, h.id, (select count(*) from live l where l.ordering_key = h.ordering_key)::int - 1 as held_back
        from heads h join dead_letters d on d.id = h.id
       where h.status = 'EXHAUSTED' and (${where})
    )
    select ordering_key as "orderingKey", id as "headId", held_back as "heldBack"
      from blocked where held_back > 0
     order by held_back desc, ordering_key
     limit ${limit}`;
}
