// A page in an order other than created, with a filter. PostgreSQL picks between walking the
// order's index (filtering row by row) and collecting the filter's matches to sort them, assuming
// the matches are spread evenly through the order. When they sit late in it (a day's events by
// last update: they were updated that day too), it walks most of the index: 300-700 ms at 1M rows.
// So, as error-text pages do, the page is found in steps:
//  1. Walk at most `window` rows of the order and keep the matches: dense matches fill the page.
//  2. When the rollups count the filter's matches (one lookup) and there are at most `cap`,
//     collect them by the filter's own indexes as (id, sort key) alone, and read the page's rows
//     from the first of them in order.
//  3. Otherwise PostgreSQL's own plan: collecting more would cost more than most walks, and a
//     filter the rollups cannot count gives no cheap way to know.
import type { Db } from '../createDb.ts';
import { readCollectedPage, readDeadLetterPage, readWindowedPage, type DeadLetterPageRow, type PageQuery } from './deadLetterPage.ts';

export interface OrderedPageSearch {
  /** Rows of the order step 1 looks at. */
  window: number;
  /** Matches step 2 collects before leaving the page to PostgreSQL's plan. */
  cap: number;
}

export const ORDERED_PAGE_SEARCH: OrderedPageSearch = { window: 2_000, cap: 50_000 };

export async function readOrderedPage(
  db: Db, page: PageQuery, countFromRollups: (() => Promise<number>) | null, search = ORDERED_PAGE_SEARCH,
): Promise<DeadLetterPageRow[]> {
  if (!countFromRollups) return readDeadLetterPage(db, page);
  const windowed = await readWindowedPage(db, page, search.window);
  if (windowed.length === page.limit) return windowed;
  if ((await countFromRollups()) > search.cap) return readDeadLetterPage(db, page);
  return (await readCollectedPage(db, page, search.cap)) ?? readDeadLetterPage(db, page);
}
