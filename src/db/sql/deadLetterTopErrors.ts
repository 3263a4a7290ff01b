// The most frequent error signatures among the filtered dead letters.
import { Prisma } from '../../generated/prisma/client.ts';

export interface TopErrorRow {
  signature: string;
  count: number;
  firstSeen: Date;
  lastSeen: Date;
  sampleId: bigint;
}

export function deadLetterTopErrorsSql(where: Prisma.Sql, limit: number): Prisma.Sql {
  return Prisma.sql`
    select d.error_signature as signature, count(*)::int as count, min(d.created_at) as "firstSeen",
           max(d.created_at) as "lastSeen", min(d.id) as "sampleId"
      from dead_letters d
     where ${where}
     group by d.error_signature
     order by count(*) desc, d.error_signature
     limit ${limit}`;
}
