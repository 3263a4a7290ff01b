import { describe, expect, it } from 'vitest';
import { readCollectedPage, readDeadLetterPage, type PageQuery } from '../src/db/sql/deadLetterPage.ts';
import { readOrderedPage } from '../src/db/sql/orderedPage.ts';
import { deadLetterWhereSql } from '../src/db/sql/deadLetterWhere.ts';
import type { DeadLetterStatus } from '../src/generated/prisma/client.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';

const t = useTestDatabase();
// A small window and cap, so a handful of rows puts each filter in a different step.
const SEARCH = { window: 5, cap: 4 };
const byAttemptsDesc = { field: 'ATTEMPTS' as const, descending: true, after: null };
const status = (s: DeadLetterStatus) => deadLetterWhereSql({ statuses: [s] });

// In ATTEMPTS DESC order: 10 PENDING (attempts 30..21), 6 DISCARDED (20..15), 3 EXHAUSTED (5..3).
async function seed() {
  for (let a = 30; a > 20; a--) await insertDeadLetter(t.db, { attempts: a });
  for (let a = 20; a > 14; a--) await insertDeadLetter(t.db, { status: 'DISCARDED', attempts: a, nextAttemptAt: null });
  for (let a = 5; a > 2; a--) await insertDeadLetter(t.db, { status: 'EXHAUSTED', attempts: a, nextAttemptAt: null });
}

describe('a page in an order other than created', () => {
  it('gives the rows PostgreSQL’s own plan gives, whichever step finds them, and keeps the cursor', async () => {
    await seed();
    let counted = 0;
    const countOf = (s: DeadLetterStatus) => async () => {
      counted += 1;
      return t.db.deadLetter.count({ where: { status: s } });
    };
    const both = async (s: DeadLetterStatus, limit: number, after: PageQuery['after'] = null, count: (() => Promise<number>) | null = countOf(s)) => {
      const page = { ...byAttemptsDesc, where: status(s), limit, after };
      const ordered = await readOrderedPage(t.db, page, count, SEARCH);
      const plain = await readDeadLetterPage(t.db, page);
      expect(ordered.map((r) => r.id)).toEqual(plain.map((r) => r.id));
      return ordered;
    };

    // PENDING fills the page within the window's 5 rows: no count needed.
    expect((await both('PENDING', 3)).map((r) => r.attempts)).toEqual([30, 29, 28]);
    expect(counted).toBe(0);
    // EXHAUSTED: none in the window; 3 matches, within the cap of 4: collected.
    const exhausted = await both('EXHAUSTED', 2);
    expect(exhausted.map((r) => r.attempts)).toEqual([5, 4]);
    expect(counted).toBe(1);
    const last = exhausted.at(-1)!;
    expect((await both('EXHAUSTED', 2, { key: last.sortKey, id: last.id })).map((r) => r.attempts)).toEqual([3]);
    // DISCARDED: 6 matches, past the cap: PostgreSQL's plan.
    expect((await both('DISCARDED', 3)).map((r) => r.attempts)).toEqual([20, 19, 18]);
    // A filter the rollups cannot count: PostgreSQL's plan, without a window.
    expect((await both('DISCARDED', 3, null, null)).map((r) => r.attempts)).toEqual([20, 19, 18]);
  });

  it('collects a page only while the matches are within the cap', async () => {
    await seed();
    const page = { ...byAttemptsDesc, where: status('EXHAUSTED'), limit: 2 };
    expect(await readCollectedPage(t.db, page, 2)).toBeNull();
    expect((await readCollectedPage(t.db, page, 3))!.map((r) => r.attempts)).toEqual([5, 4]);
    // Ascending, from the other end, and nothing at all.
    expect((await readCollectedPage(t.db, { ...page, descending: false }, 3))!.map((r) => r.attempts)).toEqual([3, 4]);
    expect(await readCollectedPage(t.db, { ...page, where: status('RESOLVED') }, 3)).toEqual([]);
  });
});
