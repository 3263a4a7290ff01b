// Oldest PENDING event, and how retrying ends: SUCCEEDED against EXHAUSTED.
import { Prisma } from '../../generated/prisma/client.ts';

export interface RetryStatsRow {
  oldestPendingCreatedAt: Date | null;
  oldestPendingAgeSeconds: number | null;
  succeeded: number;
  exhausted: number;
  meanAttemptsToSuccess: number | null;
}

export function deadLetterRetryStatsSql(where: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`
    select min(d.created_at) filter (where d.status = 'PENDING') as "oldestPendingCreatedAt",
           extract(epoch from now() - min(d.created_at) filter (where d.status = 'PENDING'))::float8 as "oldestPendingAgeSeconds",
           count(*) filter (where d.status = 'SUCCEEDED')::int as succeeded,
           count(*) filter (where d.status = 'EXHAUSTED')::int as exhausted,
           (avg(d.attempts) filter (where d.status = 'SUCCEEDED'))::float8 as "meanAttemptsToSuccess"
      from dead_letters d
     where ${where}`;
}
