import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';

export interface ErrorHead {
  id: bigint;
  /** The first 2 KB of the stored stack and its last 2 KB (a Python traceback lists the innermost call last); null without a stack. */
  stackHead: string | null;
  stackTail: string | null;
  /** The first 500 characters of the message. */
  messageHead: string;
}

/** The beginnings of these events' errors, enough for one line each: a page of groups reads its samples' in one statement. */
export async function findErrorHeads(db: Db, ids: readonly bigint[]): Promise<ErrorHead[]> {
  if (ids.length === 0) return [];
  const rows = await runSql<{ id: bigint; stack_head: string | null; stack_tail: string | null; message_head: string }>(db, Prisma.sql`
    select d.id, left(d.error_stack, 2048) as stack_head, right(d.error_stack, 2048) as stack_tail, left(d.error_message, 500) as message_head
      from dead_letters d where d.id = any(${ids.map(String)}::bigint[])`);
  return rows.map((r) => ({ id: BigInt(r.id), stackHead: r.stack_head, stackTail: r.stack_tail, messageHead: r.message_head }));
}
