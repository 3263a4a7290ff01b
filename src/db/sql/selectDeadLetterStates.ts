import type { Db } from '../createDb.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

export interface DeadLetterState {
  id: bigint;
  status: DeadLetterStatus;
  version: number;
}

/** Current status and version of the given ids (missing ids are simply absent). */
export async function selectDeadLetterStates(db: Db, ids: bigint[]): Promise<DeadLetterState[]> {
  return runSql<DeadLetterState>(db, Prisma.sql`
    select id, status, version from dead_letter_states where id = any(${ids.map(String)}::bigint[]) order by id`);
}
