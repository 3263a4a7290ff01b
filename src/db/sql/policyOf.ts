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
