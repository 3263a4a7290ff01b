// What /metrics reads at scrape time.
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/**
 * Dead letters per status and event type, from the rollups (kept exact by the triggers, in the
 * writers' transactions) rather than counting the table at every scrape: ~86k rollup rows instead
 * of 1M events in bench:read's seed.
 */
export function deadLettersByStatusAndType(db: Db): Promise<{ status: string; event_type: string; n: number }[]> {
  return runSql(db, Prisma.sql`
    select status::text, event_type, sum(count)::int as n from dead_letter_rollups group by 1, 2 having sum(count) <> 0`);
}

/** Seconds since the oldest PENDING event that is due became due; null when none is. */
export async function oldestDuePendingAgeSeconds(db: Db): Promise<number | null> {
  const [row] = await runSql<{ age: number | null }>(db, Prisma.sql`
    select extract(epoch from now() - min(next_attempt_at))::float8 as age
      from dead_letter_states where status = 'PENDING' and next_attempt_at <= now()`);
  return row?.age ?? null;
}
