import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/** Adds a NOTE_ADDED history row; false when the dead letter does not exist. */
export async function insertDeadLetterNote(db: Db, p: { id: bigint; actor: string; note: string }): Promise<bigint | null> {
  const [row] = await runSql<{ id: bigint }>(db, Prisma.sql`
    insert into dead_letter_actions (dead_letter_id, action, actor, reason)
    select d.id, 'NOTE_ADDED', ${p.actor}::text, ${p.note}::text from dead_letters d where d.id = ${p.id.toString()}::bigint
    returning id`);
  return row?.id ?? null;
}
