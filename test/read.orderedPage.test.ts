import { describe, expect, it } from 'vitest';
import { deadLetterPageSql, readCollectedPage, readDeadLetterPage, type PageQuery } from '../src/db/sql/deadLetterPage.ts';
import { readOrderedPage } from '../src/db/sql/orderedPage.ts';
import { deadLetterWhereSql, type DeadLetterFilter } from '../src/db/sql/deadLetterWhere.ts';
import { Prisma, type DeadLetterStatus } from '../src/generated/prisma/client.ts';
import { readDeadLetterConnection } from '../src/reads/deadLetterPages.ts';
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

// The order indexes leave PROCESSING rows out (migration 20261128120000_partial_read_indexes); a
// page reads those from the lease index and merges them in.
describe('a page in an order whose index leaves PROCESSING events out', () => {
  const ORDERS = { UPDATED_AT: 'd.updated_at', NEXT_ATTEMPT_AT: "coalesce(d.next_attempt_at, 'infinity'::timestamptz)", ATTEMPTS: 'd.attempts' } as const;

  // 24 events, every fourth DISCARDED (no next attempt), attempts 0-4, then 6 of them claimed:
  // PROCESSING, with the latest updated_at.
  async function seed(): Promise<Date> {
    const ids: bigint[] = [];
    for (let i = 0; i < 24; i++) {
      const discarded = i % 4 === 3;
      const row = await insertDeadLetter(t.db, {
        attempts: (i * 7) % 5,
        status: discarded ? 'DISCARDED' : 'PENDING',
        nextAttemptAt: discarded ? null : new Date(Date.UTC(2026, 0, 1, 0, (i * 11) % 24)),
      });
      ids.push(row.id);
    }
    const [row] = await t.db.$queryRaw<{ now: Date }[]>`select now()`;
    const claimed = ids.filter((_, i) => i % 4 === 1 || i === 0).map(String);
    await t.db.$executeRaw`update dead_letter_states set status = 'PROCESSING', lease_owner = 'w', lease_token = gen_random_uuid(),
                             lease_expires_at = now() + interval '1 minute' where id = any(${claimed}::bigint[])`;
    return row!.now;
  }

  type Page = Awaited<ReturnType<typeof readDeadLetterConnection>>;
  const ID = new Set(['id'] as const);
  // Every id the pages give, in order, following `next` until it says there is no more.
  async function pageThrough(read: (cursor: string | null) => Promise<Page>, next: (page: Page) => [boolean, string | null], isBackward = false) {
    const ids: bigint[] = [];
    for (let cursor: string | null = null; ;) {
      const page = await read(cursor);
      const pageIds = page.edges.map((e) => e.node.id);
      if (isBackward) ids.unshift(...pageIds);
      else ids.push(...pageIds);
      const [hasMore, nextCursor] = next(page);
      if (!hasMore) return ids;
      cursor = nextCursor;
    }
  }

  it('gives every event once, in order, forward and back, with or without a filter', async () => {
    const beforeClaims = await seed();
    const filters: DeadLetterFilter[] = [{}, { statuses: ['PENDING', 'PROCESSING'] }, { statuses: ['PROCESSING'] }, { statuses: ['DISCARDED'] },
      { attempts: { min: 2 } }, { updatedAt: { from: beforeClaims } }, { eventTypes: ['order.placed'] }];
    for (const [field, expr] of Object.entries(ORDERS) as [keyof typeof ORDERS, string][]) {
      for (const direction of ['ASC', 'DESC'] as const) {
        for (const filter of filters) {
          const expected = await t.db.$queryRaw<{ id: bigint }[]>`select d.id from dead_letters_current d where ${deadLetterWhereSql(filter)}
            order by ${Prisma.raw(expr)} ${Prisma.raw(direction)}, d.id ${Prisma.raw(direction)}`;
          const orderBy = { field, direction };
          const forward = await pageThrough((after) => readDeadLetterConnection(t.db, filter, { orderBy, first: 4, after }, ID),
            (page) => [page.pageInfo.hasNextPage, page.pageInfo.endCursor]);
          expect({ field, direction, filter, ids: forward }).toEqual({ field, direction, filter, ids: expected.map((r) => r.id) });
          // And back from the end, by `last`/`before`.
          const back = await pageThrough((before) => readDeadLetterConnection(t.db, filter, { orderBy, last: 5, before }, ID),
            (page) => [page.pageInfo.hasPreviousPage, page.pageInfo.startCursor], true);
          expect({ field, direction, filter, ids: back }).toEqual({ field, direction, filter, ids: expected.map((r) => r.id) });
        }
      }
    }
  });

  it('lets PostgreSQL reach the partial indexes for the orders and for updatedAt and attempts filters', async () => {
    const planOf = async (sql: Prisma.Sql) => {
      const [, plan] = await t.db.$transaction([
        t.db.$executeRaw`set local enable_seqscan = off`,
        t.db.$queryRaw<{ 'QUERY PLAN': string }[]>`explain ${sql}`,
      ]);
      return plan.map((line) => line['QUERY PLAN']).join('\n');
    };
    const page = (field: keyof typeof ORDERS) => deadLetterPageSql({ field, descending: true, after: null, limit: 10, where: Prisma.sql`true` });
    for (const [field, index] of [['UPDATED_AT', 'updated_idx'], ['ATTEMPTS', 'attempts_idx'], ['NEXT_ATTEMPT_AT', 'next_attempt_order_idx']] as const) {
      const plan = await planOf(page(field));
      expect(plan).toContain(`dead_letter_states_${index}`);
      expect(plan).toContain('dead_letter_states_lease_idx');
    }
    const count = (filter: DeadLetterFilter) => Prisma.sql`select count(*) from dead_letters_current d where ${deadLetterWhereSql(filter)}`;
    expect(await planOf(count({ updatedAt: { from: new Date() } }))).toMatch(/dead_letter_states_updated_idx[\s\S]*dead_letter_states_lease_idx/);
    expect(await planOf(count({ attempts: { min: 3 } }))).toMatch(/dead_letter_states_attempts_idx[\s\S]*dead_letter_states_lease_idx/);
    // Either status index (the smaller, without SUCCEEDED rows, since 20261201100000) beside the lease index.
    expect(await planOf(count({ statuses: ['EXHAUSTED', 'PROCESSING'] }))).toMatch(/dead_letter_states_status_(next_attempt|created)_idx[\s\S]*dead_letter_states_lease_idx/);
  });
});
