// Which retry policy governs an event type, and which events of an ordering key count as its queue:
// SQL shared by the claim (what may be delivered) and the stats (what is blocked), so both say the
// same thing.
import { Prisma } from '../../generated/prisma/client.ts';

/** The policy governing the event type in the column `eventType`: its own row, else the default '*'. */
export function policyOf(eventType: string): Prisma.Sql {
  return Prisma.raw(`(select p.* from retry_policies p where p.event_type in (${eventType}, '*') order by p.event_type = '*' limit 1)`);
}

/**
 * Statuses of an unfinished event. For an ordered type, the unfinished events of one (event type,
 * ordering key) wait in (coalesce(ordering_seq, -1), id) order: only the first, the key's head, may
 * be delivered, an EXHAUSTED one included. dead_letter_states_live_key_idx holds exactly these rows.
 */
export const UNFINISHED_STATUSES = Prisma.raw(`('PENDING', 'PROCESSING', 'EXHAUSTED')`);

/**
 * `pending_types (event_type)`: every event type with a PENDING event, found by a skip scan of
 * dead_letter_states_pending_type_idx (one index descent per type, then a null row that ends it).
 * The claim (which types may be delivered) and the held events (which are held) start from it.
 */
export const PENDING_TYPES = Prisma.raw(`pending_types as (
      (select d.event_type from dead_letter_states d where d.status = 'PENDING' order by d.event_type limit 1)
      union all
      select (select d.event_type from dead_letter_states d
               where d.status = 'PENDING' and d.event_type > t.event_type order by d.event_type limit 1)
        from pending_types t where t.event_type is not null)`);
