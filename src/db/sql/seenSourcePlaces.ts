import type { Db } from '../createDb.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { runSql } from '../runSql.ts';

/**
 * Which of the given `kind:place` addresses some event's origin names (an AMQP queue, a NATS subject,
 * a Redis stream): places Lazarus has seen. Reads dead_letters' origins without an index, so it is
 * for the admin's short list of redirects, not for a hot path.
 */
export async function seenSourcePlaces(db: Db, addresses: { kind: string; place: string }[]): Promise<Set<string>> {
  if (addresses.length === 0) return new Set();
  const keys = addresses.map((a) => `${a.kind}:${a.place}`);
  const rows = await runSql<{ address: string }>(db, Prisma.sql`
    select distinct a.address from unnest(${keys}::text[]) a(address)
     where exists (select from dead_letters d
                    where d.origin is not null
                      and a.address = (d.origin ->> 'kind') || ':' || coalesce(d.origin ->> 'queue', d.origin ->> 'sourceSubject', d.origin ->> 'subject', d.origin ->> 'sourceStream', d.origin ->> 'stream')
                    limit 1)`);
  return new Set(rows.map((r) => r.address));
}
