import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';

export type SourceSelection = { kind: 'ids'; ids: bigint[] } | { kind: 'filter'; where: Prisma.Sql; allowed: DeadLetterStatus[] };

/**
 * Of the selected events, those that cannot be redriven to source: no origin, an origin kind with no
 * broker target, or an origin naming a bridge not in `bridges` (the declared ones). The count, and
 * the first `sample` ids.
 */
export async function countWithoutSource(
  db: Db,
  p: { selection: SourceSelection; bridges: readonly string[]; sample: number },
): Promise<{ count: number; ids: bigint[] }> {
  const selected = p.selection.kind === 'ids'
    ? Prisma.sql`select d.id, d.origin from dead_letters d where d.id = any(${p.selection.ids.map(String)}::bigint[])`
    : Prisma.sql`select d.id, d.origin from dead_letters_current d
                  where (${p.selection.where}) and d.status::text = any(${p.selection.allowed}::text[])`;
  const [row] = await runSql<{ count: number; ids: bigint[] }>(db, Prisma.sql`
    with selected as materialized (${selected}),
    unusable as (
      select s.id from selected s
       where s.origin is null or not (s.origin ->> 'kind' = any(${SOURCE_KINDS}::text[]))
          or not coalesce(s.origin ->> 'bridge' = any(${p.bridges}::text[]), false))
    select (select count(*)::int from unusable) as count,
           array(select id from unusable order by id limit ${p.sample}::int) as ids`);
  return { count: row!.count, ids: row!.ids };
}

/** The origin kinds a redrive to source can deliver to (a target kind of the same name each). */
export const SOURCE_KINDS = ['amqp', 'nats', 'redis'];
