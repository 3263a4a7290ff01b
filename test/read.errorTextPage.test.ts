import { describe, expect, it } from 'vitest';
import { readErrorTextPage } from '../src/db/sql/errorTextPage.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';

const t = useTestDatabase();
// A small window and cap, so a handful of rows puts each text in a different regime.
const SEARCH = { window: 5, cap: 3 };
const newestFirst = { field: 'CREATED_AT' as const, descending: true, after: null };

// Rows created one minute apart, oldest first, each with its message; returns their ids.
async function seed(messages: string[]): Promise<bigint[]> {
  const start = Date.now() - messages.length * 60_000;
  const ids = [];
  for (const [i, errorMessage] of messages.entries()) {
    const row = await insertDeadLetter(t.db, { errorMessage, eventType: i % 2 ? 'odd' : 'even', createdAt: new Date(start + i * 60_000) });
    ids.push(row.id);
  }
  return ids;
}

describe('a page filtered by error text', () => {
  it('gives the same rows whether the text fills the window, is rare, or is common but sparse where the page starts', async () => {
    // Oldest to newest: 6 "needle", 2 "rare one", 8 "hay".
    const ids = await seed([...Array(6).fill('needle in a stack'), 'a rare one', 'another rare one', ...Array(8).fill('hay bale')]);
    const page = async (errorText: string, limit: number, extra: { eventTypes?: string[] } = {}, after: { key: string; id: bigint } | null = null) =>
      (await readErrorTextPage(t.db, { errorText, ...extra }, { ...newestFirst, after, limit }, SEARCH)).map((r) => r.id);

    // "hay" fills a page of 4 within the 5 newest rows.
    expect(await page('HAY', 4)).toEqual(ids.slice(12, 16).reverse());
    // "rare one" has 2 matches, below the cap of 3: read from its ids, other filters still apply.
    expect(await page('rare one', 4)).toEqual([ids[7], ids[6]]);
    expect(await page('rare one', 4, { eventTypes: ['even'] })).toEqual([ids[6]]);
    // "needle" has 6 matches (past the cap) but none in the 5 newest rows: the unbounded walk.
    const first = await readErrorTextPage(t.db, { errorText: 'needle' }, { ...newestFirst, limit: 4 }, SEARCH);
    expect(first.map((r) => r.id)).toEqual(ids.slice(2, 6).reverse());
    const last = first.at(-1)!;
    expect(await page('needle', 4, {}, { key: last.sortKey, id: last.id })).toEqual([ids[1], ids[0]]);
    // Nothing matches: an empty page, not an error.
    expect(await page('no such text', 4)).toEqual([]);
  });
});
