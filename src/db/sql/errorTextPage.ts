// A page of dead letters filtered by error text. No index orders rows by a substring match, so
// the page is found in up to three steps, each cheaper than the next when it answers:
//  1. Walk the order (with the other filters) for at most `window` rows and check each row's own
//     text. A common text fills the page here, without touching the trigram indexes.
//  2. Ask the side table's trigram indexes for every match, stopping at `cap`. Fewer than `cap`
//     is the complete set: the page is read from those ids (one trigram pass, then key lookups).
//     The SQL function lazarus_error_text_matches keeps PostgreSQL on the indexes at every table
//     size (see its migration).
//  3. A common text that is sparse where this page starts: walk the order without a bound.
// PostgreSQL cannot make this choice itself: it overestimates unanchored ILIKE matches and then
// walks the whole order index for a rare text (~150 ms at 1M rows).
import { Prisma } from '../../generated/prisma/client.ts';
import { deadLetterWhereSql, errorTextSql, likeContains, type DeadLetterFilter } from './deadLetterWhere.ts';
import { queryPg, type Db } from '../createDb.ts';
import { readDeadLetterPage, type DeadLetterPageRow, type PageQuery } from './deadLetterPage.ts';

export interface ErrorTextSearch {
  /** Rows of the order step 1 looks at. */
  window: number;
  /** Matches step 2 collects before calling the text common. */
  cap: number;
}

export const ERROR_TEXT_SEARCH: ErrorTextSearch = { window: 2_000, cap: 2_000 };

export async function readErrorTextPage(
  db: Db, filter: DeadLetterFilter & { errorText: string }, page: Omit<PageQuery, 'where'>, search = ERROR_TEXT_SEARCH,
): Promise<DeadLetterPageRow[]> {
  const { errorText, ...others } = filter;
  const rest = deadLetterWhereSql(others);
  const match = errorTextSql(errorText, 'scan');
  const windowed = await readDeadLetterPage(db, { ...page, where: rest, window: { rows: search.window, match } });
  if (windowed.length === page.limit) return windowed;
  const matches = await queryPg<{ id: string }>(db, Prisma.sql`
    select m::text as id from lazarus_error_text_matches(${likeContains(errorText)}, ${search.cap}::int) m`);
  if (matches.length < search.cap) {
    const ids = matches.map((m) => m.id);
    return readDeadLetterPage(db, { ...page, where: Prisma.sql`${rest} and d.id = any(${ids}::bigint[])`, materialize: true });
  }
  return readDeadLetterPage(db, { ...page, where: Prisma.sql`${rest} and ${match}` });
}
