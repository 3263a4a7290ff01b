import { Prisma } from '../../generated/prisma/client.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import type { Queryable } from './queryable.ts';
import { runSql } from '../runSql.ts';

export interface TransformCandidate {
  id: bigint;
  status: DeadLetterStatus;
  /** PostgreSQL's text of the payload, so the caller sees every digit of every number. */
  payloadText: string;
}

/** The next `limit` rows the filter selects after `afterId`, in id order, with their payload as text. Reads only. */
export async function selectTransformBatch(
  db: Queryable,
  p: { where: Prisma.Sql; allowed: DeadLetterStatus[]; afterId: bigint; limit: number },
): Promise<TransformCandidate[]> {
  const rows = await runSql<{ id: bigint; status: DeadLetterStatus; payload_text: string }>(db, Prisma.sql`
    select d.id, d.status, d.payload::text as payload_text from dead_letters_current d
     where (${p.where}) and d.status::text = any(${p.allowed}::text[]) and d.id > ${p.afterId.toString()}::bigint
     order by d.id limit ${p.limit}::int`);
  return rows.map((r) => ({ id: r.id, status: r.status, payloadText: r.payload_text }));
}
