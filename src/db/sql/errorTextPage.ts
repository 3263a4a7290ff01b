// A page of dead letters filtered by error text. No index orders rows by a substring match, so
// the page is found in up to three steps, each cheaper than the next when it answers:
//  1. Walk the order (with the other filters) for at most `window` rows and check each row's own
//     text. A common text fills the page here, without touching the trigram indexes.
//  2. Ask the side table's trigram indexes for every match, stopping at the cap. Fewer than the cap
//     is the complete set: the page is read from those ids (one trigram pass, then key lookups).
//     The SQL function lazarus_error_text_matches keeps PostgreSQL on the indexes at every table
//     size (see its migration). The cap grows with the table: collecting n matches costs about n
//     row checks, walking the order for a page costs about limit × rows / n, so they cross at
//     sqrt(limit × rows). At 10M rows a text in 1 of 1,000 rows (10,000 matches) took 74-231 ms
//     to collect and 1.2-1.8 s to walk on a loaded machine (docs/benchmarks.md, Session 15); the
//     fixed cap of 2,000, set at 1M rows, sent it to the walk.
//  3. A common text that is sparse where this page starts: walk the order without a bound.
// PostgreSQL cannot make this choice itself: it overestimates unanchored ILIKE matches and then
// walks the whole order index for a rare text (~150 ms at 1M rows).
import { Prisma } from '../../generated/prisma/client.ts';
import { deadLetterWhereSql, errorTextSql, isEventFilter, likeContains, type DeadLetterFilter } from './deadLetterWhere.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { readDeadLetterPage, type DeadLetterPageRow, type PageQuery } from './deadLetterPage.ts';

export interface ErrorTextSearch {
  /** Rows of the order step 1 looks at. */
  window: number;
  /** Matches step 2 collects before calling the text common, at least. */
  cap: number;
  /** Raise the cap to sqrt(limit × rows of dead_letters, as last analysed) where that is more. */
  isCapScaled?: boolean;
}

export const ERROR_TEXT_SEARCH: ErrorTextSearch = { window: 2_000, cap: 2_000, isCapScaled: true };

export async function readErrorTextPage(
  db: Db, filter: DeadLetterFilter & { errorText: string }, page: Omit<PageQuery, 'where'>, search = ERROR_TEXT_SEARCH,
): Promise<DeadLetterPageRow[]> {
  const { errorText, ...others } = filter;
  const rest = deadLetterWhereSql(others);
  const match = errorTextSql(errorText, 'scan');
  // Without a state field or order, each step reads dead_letters alone, then the state of the page's
  // rows. Through the view, the plain walk of step 3 became a parallel scan of the whole table at
  // 10M rows (11 s): the join's cost per row tipped PostgreSQL's estimate.
  const isEventTableOnly = page.field === 'CREATED_AT' && isEventFilter(others);
  const windowed = await readDeadLetterPage(db, { ...page, where: rest, window: { rows: search.window, match }, isEventTableOnly });
  if (windowed.length === page.limit) return windowed;
  const cap = search.isCapScaled
    ? Prisma.sql`(select greatest(${search.cap}::int, sqrt(${page.limit}::int * greatest(c.reltuples, 0))::int) from pg_class c where c.oid = 'dead_letters'::regclass)`
    : Prisma.sql`${search.cap}::int`;
  const matches = await runSql<{ id: string; cap: number }>(db, Prisma.sql`
    select m::text as id, k.cap from (select ${cap} as cap) k, lazarus_error_text_matches(${likeContains(errorText)}, k.cap) m`);
  if (matches.length < (matches[0]?.cap ?? 1)) {
    const ids = matches.map((m) => m.id);
    const where = Prisma.sql`${rest} and d.id = any(${ids}::bigint[])`;
    return readDeadLetterPage(db, isEventTableOnly ? { ...page, where, isEventTableOnly } : { ...page, where, materialize: true });
  }
  return readDeadLetterPage(db, { ...page, where: Prisma.sql`${rest} and ${match}`, isEventTableOnly });
}
