import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { runSql } from '../src/db/runSql.ts';
import { deadLetterPageSql, readDeadLetterPage } from '../src/db/sql/deadLetterPage.ts';
import { deadLetterWhereSql, type DeadLetterFilter } from '../src/db/sql/deadLetterWhere.ts';
import { estimateRows } from '../src/db/sql/estimateRows.ts';
import { Prisma } from '../src/generated/prisma/client.ts';
import { statusWalkOf } from '../src/reads/deadLetterPages.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { hours, seedReadRows } from './helpers/readSeed.ts';

const t = useTestDatabase();
let server: GraphQLServer;
let ids: Record<string, bigint>;

beforeAll(() => {
  server = testServer(t.db);
});
beforeEach(async () => {
  ids = await seedReadRows(t.db);
});

const PAGE = `query ($filter: DeadLetterFilter, $orderBy: DeadLetterOrder, $first: Int, $after: String, $last: Int, $before: String) {
  deadLetters(filter: $filter, orderBy: $orderBy, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { id } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;

type Page = {
  deadLetters: {
    edges: { cursor: string; node: { id: string } }[];
    pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  };
};

function keys(page: Page): string[] {
  const byId = new Map(Object.entries(ids).map(([k, v]) => [v.toString(), k]));
  return page.deadLetters.edges.map((e) => byId.get(e.node.id) ?? e.node.id);
}

async function page(variables: Record<string, unknown>): Promise<Page> {
  const { body } = await execute<Page>(server, PAGE, variables);
  expect(body.errors).toBeUndefined();
  return body.data!;
}

// Seed (created, updated, next attempt, attempts): a(0,1,5,1) b(0,2,-,10) c(3,3,4,3) d(26,27,-,2)
// e(30,31,-,0) f(30,32,-,4) g(50,50,4,3); ties go by id (insertion order a..g).
const ORDERS: [string, string, string[]][] = [
  ['CREATED_AT', 'ASC', ['a', 'b', 'c', 'd', 'e', 'f', 'g']],
  ['CREATED_AT', 'DESC', ['g', 'f', 'e', 'd', 'c', 'b', 'a']],
  ['UPDATED_AT', 'ASC', ['a', 'b', 'c', 'd', 'e', 'f', 'g']],
  ['UPDATED_AT', 'DESC', ['g', 'f', 'e', 'd', 'c', 'b', 'a']],
  ['NEXT_ATTEMPT_AT', 'ASC', ['c', 'g', 'a', 'b', 'd', 'e', 'f']],
  ['NEXT_ATTEMPT_AT', 'DESC', ['f', 'e', 'd', 'b', 'a', 'g', 'c']],
  ['ATTEMPTS', 'ASC', ['e', 'a', 'd', 'c', 'g', 'f', 'b']],
  ['ATTEMPTS', 'DESC', ['b', 'f', 'g', 'c', 'd', 'a', 'e']],
];

describe('deadLetters ordering and paging', () => {
  it.each(ORDERS)('orders by %s %s with id as tiebreak, the same in one page and in pages of 2 both ways', async (field, direction, expected) => {
    const orderBy = { field, direction };
    expect(keys(await page({ orderBy, first: 500 }))).toEqual(expected);

    const forward: string[] = [];
    let after: string | null = null;
    for (;;) {
      const p: Page = await page({ orderBy, first: 2, after });
      forward.push(...keys(p));
      expect(p.deadLetters.pageInfo.hasPreviousPage).toBe(after !== null);
      if (!p.deadLetters.pageInfo.hasNextPage) break;
      after = p.deadLetters.pageInfo.endCursor;
    }
    expect(forward).toEqual(expected);

    const backward: string[] = [];
    let before: string | null = null;
    for (;;) {
      const p: Page = await page({ orderBy, last: 2, before });
      backward.unshift(...keys(p));
      if (!p.deadLetters.pageInfo.hasPreviousPage) break;
      before = p.deadLetters.pageInfo.startCursor;
    }
    expect(backward).toEqual(expected);
  });

  it('defaults to newest first, 50 to a page', async () => {
    expect(keys(await page({}))).toEqual(['g', 'f', 'e', 'd', 'c', 'b', 'a']);
  });

  it('pages within a filter', async () => {
    const filter = { statuses: ['PENDING'] };
    const first = await page({ filter, first: 2, orderBy: { field: 'CREATED_AT', direction: 'ASC' } });
    expect(keys(first)).toEqual(['a', 'c']);
    const second = await page({ filter, first: 2, after: first.deadLetters.pageInfo.endCursor, orderBy: { field: 'CREATED_AT', direction: 'ASC' } });
    expect(keys(second)).toEqual(['g']);
    expect(second.deadLetters.pageInfo.hasNextPage).toBe(false);
  });

  it('walks every row exactly once while rows are inserted between pages', async () => {
    const orderBy = { field: 'CREATED_AT', direction: 'DESC' };
    const seen: string[] = [];
    let after: string | null = null;
    let inserted = 0;
    for (;;) {
      const p: Page = await page({ orderBy, first: 2, after });
      seen.push(...p.deadLetters.edges.map((e) => e.node.id));
      // New rows land at the head (newest) and also in the middle of the walk (an old created_at).
      await t.db.deadLetter.create({ data: { eventType: 'late', createdAt: hours(100 + inserted) } });
      await t.db.deadLetter.create({ data: { eventType: 'late', createdAt: hours(29) } });
      inserted += 1;
      if (!p.deadLetters.pageInfo.hasNextPage) break;
      after = p.deadLetters.pageInfo.endCursor;
    }
    expect(new Set(seen).size).toBe(seen.length);
    const original = Object.values(ids).map(String);
    expect(original.every((id) => seen.includes(id))).toBe(true);
    // Whatever was served came in the table's final order: no repeats, no going back.
    const all = await t.db.deadLetter.findMany({ orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
    const seenSet = new Set(seen);
    const served = all.filter((r) => seenSet.has(r.id.toString())).map((r) => r.id.toString());
    expect(served).toEqual(seen);
  });
});

describe('deadLetters with error text or payload filters', () => {
  async function walk(filter: Record<string, unknown>, first: number, orderBy = { field: 'ATTEMPTS', direction: 'DESC' }): Promise<string[]> {
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const p: Page = await page({ filter, orderBy, first, after });
      seen.push(...p.deadLetters.edges.map((e) => e.node.id));
      if (!p.deadLetters.pageInfo.hasNextPage) return seen;
      after = p.deadLetters.pageInfo.endCursor;
    }
  }

  it('pages few matches (collected first, then sorted) in order', async () => {
    expect((await walk({ errorText: 'inventory' }, 1)).map((id) => keys({ deadLetters: { edges: [{ cursor: '', node: { id } }], pageInfo: {} as never } })[0])).toEqual(['b', 'a', 'e']);
  });

  it('pages many matches (walking the order index) in order, each once', async () => {
    await t.db.deadLetter.createMany({
      data: Array.from({ length: 2100 }, (_, i) => ({ eventType: 'bulk', errorMessage: `disk full on node ${i}`, attempts: i % 7, payload: { n: i } })),
    });
    const seen = await walk({ errorText: 'disk full' }, 500);
    const expected = await t.db.deadLetter.findMany({ where: { eventType: 'bulk' }, orderBy: [{ attempts: 'desc' }, { id: 'desc' }], select: { id: true } });
    expect(seen).toEqual(expected.map((r) => r.id.toString()));
  });
});

describe('deadLetters bad input', () => {
  const validCursor = async () => (await page({ first: 1 })).deadLetters.pageInfo.endCursor!;
  const BAD: [string, (cursor: string) => Record<string, unknown>, string][] = [
    ['first and last together', () => ({ first: 2, last: 2 }), 'first'],
    ['first of 0', () => ({ first: 0 }), 'first'],
    ['a negative first', () => ({ first: -1 }), 'first'],
    ['first above the page cap', () => ({ first: 501 }), 'first'],
    ['last of 0', () => ({ last: 0 }), 'last'],
    ['an undecodable cursor', () => ({ after: 'not a cursor' }), 'after'],
    ['a cursor of forged JSON', () => ({ after: Buffer.from('["CREATED_AT","DESC","1\' OR 1=1","1"]').toString('base64url') }), 'after'],
    ['a cursor from another order', (cursor) => ({ after: cursor, orderBy: { field: 'ATTEMPTS', direction: 'DESC' } }), 'after'],
    ['an undecodable before cursor', () => ({ last: 2, before: '%%%' }), 'before'],
  ];

  it.each(BAD)('answers BAD_USER_INPUT for %s', async (_name, vars, argument) => {
    const { status, body } = await execute(server, PAGE, vars(await validCursor()));
    expect(status).toBe(200);
    expect(body.data).toBeNull();
    expect(body.errors).toHaveLength(1);
    expect(body.errors![0]!.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument });
  });

  it('does not count rows unless totalCount is asked for, and counts exactly when it is', async () => {
    const { body } = await execute<{ deadLetters: { totalCount: number } }>(server, '{ deadLetters(first: 1, filter: { queues: ["orders"] }) { totalCount } }');
    expect(body).toEqual({ data: { deadLetters: { totalCount: 3 } } });
  });

  it.each([
    // sources are not rolled up: counted from the table, stopping after limit + 1 matches
    ['{ sources: ["checkout"] }', 2, { count: 2, exact: false }],
    ['{ sources: ["checkout"] }', 3, { count: 3, exact: true }],
    ['{ sources: ["checkout"] }', 10_000, { count: 3, exact: true }],
    ['{ errorText: "inventory-service" }', 1, { count: 1, exact: false }],
    ['{ errorText: "inventory-service" }', 2, { count: 2, exact: true }],
    // queues are: exact from the rollups whatever the limit
    ['{ queues: ["orders"] }', 1, { count: 3, exact: true }],
    ['{ queues: ["nope"] }', 1, { count: 0, exact: true }],
  ])('boundedCount of %s up to %i', async (filter, limit, expected) => {
    const { body } = await execute<{ deadLetters: { boundedCount: unknown } }>(server, `{ deadLetters(first: 1, filter: ${filter}) { boundedCount(limit: ${limit}) { count exact } } }`);
    expect(body).toEqual({ data: { deadLetters: { boundedCount: expected } } });
  });

  it.each([0, 100_001])('answers BAD_USER_INPUT for boundedCount(limit: %i)', async (limit) => {
    const { body } = await execute(server, `{ deadLetters(first: 1) { boundedCount(limit: ${limit}) { count } } }`);
    expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument: 'limit' });
  });
});

describe('deadLetters by status in created order (walked on the state table)', () => {
  const ORDER_BY = { createdAt: 'desc', id: 'desc' } as const;

  async function walkStatus(filter: Record<string, unknown>, direction: 'ASC' | 'DESC', backward: boolean): Promise<string[]> {
    const orderBy = { field: 'CREATED_AT', direction };
    const seen: string[] = [];
    let cursor: string | null = null;
    for (;;) {
      const p: Page = await page(backward ? { filter, orderBy, last: 2, before: cursor } : { filter, orderBy, first: 2, after: cursor });
      const got = p.deadLetters.edges.map((e) => e.node.id);
      if (backward) seen.unshift(...got); else seen.push(...got);
      const { pageInfo } = p.deadLetters;
      if (!(backward ? pageInfo.hasPreviousPage : pageInfo.hasNextPage)) return seen;
      cursor = backward ? pageInfo.startCursor : pageInfo.endCursor;
    }
  }

  it.each([
    [['EXHAUSTED']],
    [['PENDING', 'EXHAUSTED']],
    [['RESOLVED', 'PROCESSING']],
    [['PROCESSING', 'PENDING', 'DISCARDED', 'EXHAUSTED']],
  ])('pages %j newest and oldest first, forward and back, each row once, with ties by id', async (statuses) => {
    // More EXHAUSTED rows, two tied with a and b at hour 0, and one leased (PROCESSING) row.
    for (const h of [0, 0, 7, 40]) await t.db.deadLetter.create({ data: { eventType: 'more', status: 'EXHAUSTED', nextAttemptAt: null, createdAt: hours(h) } });
    await t.db.$executeRaw`update dead_letter_states set status = 'PROCESSING', lease_owner = 'w1', lease_token = gen_random_uuid(),
                             lease_expires_at = now() + interval '1 minute' where id = ${ids.c}`;
    for (const createdAt of [undefined, { from: hours(0).toISOString(), to: hours(41).toISOString() }, { from: hours(1).toISOString() }]) {
      const filter = { statuses, ...(createdAt ? { createdAt } : {}) };
      const where = { status: { in: statuses as never[] }, createdAt: createdAt ? { gte: createdAt.from, ...(createdAt.to ? { lt: createdAt.to } : {}) } : undefined };
      const newest = (await t.db.deadLetter.findMany({ where, orderBy: [{ createdAt: ORDER_BY.createdAt }, { id: ORDER_BY.id }], select: { id: true } })).map((r) => r.id.toString());
      expect(newest.length).toBeGreaterThan(0);
      expect(await walkStatus(filter, 'DESC', false)).toEqual(newest);
      expect(await walkStatus(filter, 'DESC', true)).toEqual(newest);
      expect(await walkStatus(filter, 'ASC', false)).toEqual([...newest].reverse());
      expect(await walkStatus(filter, 'ASC', true)).toEqual([...newest].reverse());
    }
  });

  it.each([
    [{ eventTypes: ['order.placed'] }],
    [{ eventTypes: ['order.placed', 'more'], attempts: { min: 3 } }],
    [{ orderingKey: 'cust-2' }],
    [{ updatedAt: { from: hours(2).toISOString() } }],
  ])('pages a status filter with %j (read on the state row) forward and back, each row once', async (more) => {
    for (const h of [0, 0, 7, 40]) await t.db.deadLetter.create({ data: { eventType: h ? 'more' : 'order.placed', status: 'EXHAUSTED', nextAttemptAt: null, attempts: h % 5, createdAt: hours(h), updatedAt: hours(h + 1) } });
    const statuses = ['EXHAUSTED', 'PENDING'];
    const filter = { statuses, ...more };
    const m = more as { eventTypes?: string[]; attempts?: { min: number }; orderingKey?: string; updatedAt?: { from: string } };
    const where = { status: { in: statuses as never[] }, eventType: m.eventTypes ? { in: m.eventTypes } : undefined, attempts: m.attempts ? { gte: m.attempts.min } : undefined,
      orderingKey: m.orderingKey, updatedAt: m.updatedAt ? { gte: m.updatedAt.from } : undefined };
    const newest = (await t.db.deadLetter.findMany({ where, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: { id: true } })).map((r) => r.id.toString());
    expect(newest.length).toBeGreaterThan(0);
    expect(await walkStatus(filter, 'DESC', false)).toEqual(newest);
    expect(await walkStatus(filter, 'DESC', true)).toEqual(newest);
    expect(await walkStatus(filter, 'ASC', false)).toEqual([...newest].reverse());
  });

  it.each([
    [{ queues: ['orders'] }],
    [{ sources: ['checkout'], errorKinds: ['DOWNSTREAM_API'] }],
    [{ queues: ['shipping'], eventTypes: ['order.placed', 'order.shipped'], attempts: { min: 1 } }],
    [{ payloadContains: JSON.stringify({ customer: { tier: 'gold' } }) }],
  ])('pages a status filter with %j (read on dead_letters) forward and back, each row once', async (more) => {
    // EXHAUSTED rows in two queues, two tied at hour 0 with a and b, one leased (PROCESSING) row.
    for (const [h, queue] of [[0, 'orders'], [0, 'shipping'], [7, 'orders'], [40, 'orders'], [41, 'shipping']] as const) {
      await t.db.deadLetter.create({ data: { eventType: 'order.placed', queue, source: 'checkout', errorKind: 'DOWNSTREAM_API', status: 'EXHAUSTED', nextAttemptAt: null,
        attempts: h % 3, createdAt: hours(h), payload: { customer: { tier: h ? 'gold' : 'silver' } } } });
    }
    await t.db.$executeRaw`update dead_letter_states set status = 'PROCESSING', lease_owner = 'w1', lease_token = gen_random_uuid(),
                             lease_expires_at = now() + interval '1 minute' where id = ${ids.g}`;
    const statuses = ['EXHAUSTED', 'PENDING', 'PROCESSING'];
    const filter = { statuses, ...more };
    const m = more as { payloadContains?: string };
    const domain = { ...filter, payloadContains: m.payloadContains && JSON.parse(m.payloadContains) } as DeadLetterFilter; // the filter as the API parses it
    // The same filter through the view, in the view's own order: what every page must add up to.
    const newest = (await runSql<{ id: bigint }>(t.db, Prisma.sql`select d.id from dead_letters_current d where ${deadLetterWhereSql(domain)} order by d.created_at desc, d.id desc`)).map((r) => String(r.id));
    expect(newest.length).toBeGreaterThan(1);
    // The page is found from the smaller side by PostgreSQL's estimates (readCreatedPage); the walk
    // on the state table gives the same rows, from the start and past a cursor.
    const walk = statusWalkOf(domain)!;
    expect(walk.statusWalk.eventWhere).not.toBeNull();
    for (const descending of [true, false]) {
      const expected = descending ? newest : [...newest].reverse();
      const q = { field: 'CREATED_AT', descending, limit: 100, ...walk } as const;
      const all = await readDeadLetterPage(t.db, { ...q, after: null });
      expect(all.map((r) => String(r.id))).toEqual(expected);
      const rest = await readDeadLetterPage(t.db, { ...q, after: { key: all[0]!.sortKey, id: all[0]!.id } });
      expect(rest.map((r) => String(r.id))).toEqual(expected.slice(1));
    }
    expect(await walkStatus(filter, 'DESC', false)).toEqual(newest);
    expect(await walkStatus(filter, 'DESC', true)).toEqual(newest);
    expect(await walkStatus(filter, 'ASC', false)).toEqual([...newest].reverse());
    expect(await walkStatus(filter, 'ASC', true)).toEqual([...newest].reverse());
  });

  it('walks filters of statuses that its index holds, with the fields only dead_letters has apart', () => {
    const walk = (filter: Parameters<typeof statusWalkOf>[0]) => {
      const w = statusWalkOf(filter);
      return w && { statuses: w.statusWalk.statuses, readsEvents: w.statusWalk.eventWhere !== null };
    };
    expect(walk({ statuses: ['EXHAUSTED'] })).toEqual({ statuses: ['EXHAUSTED'], readsEvents: false });
    expect(walk({ statuses: ['EXHAUSTED', 'PROCESSING', 'EXHAUSTED'], createdAt: { from: hours(0) } })).toEqual({ statuses: ['EXHAUSTED', 'PROCESSING'], readsEvents: false });
    expect(walk({ statuses: ['EXHAUSTED', 'SUCCEEDED'] })).toBeUndefined(); // SUCCEEDED is not in the index
    expect(walk({ statuses: ['EXHAUSTED'], eventTypes: ['order.placed'], attempts: { min: 2 }, orderingKey: 'k' })).toEqual({ statuses: ['EXHAUSTED'], readsEvents: false });
    expect(walk({ statuses: ['EXHAUSTED'], queues: ['orders'] })).toEqual({ statuses: ['EXHAUSTED'], readsEvents: true });
    expect(walk({ statuses: ['EXHAUSTED'], groupId: 1n })).toEqual({ statuses: ['EXHAUSTED'], readsEvents: true });
    expect(walk({ statuses: [] })).toBeUndefined();
    expect(walk({ createdAt: { from: hours(0) } })).toBeUndefined();
    // The state part renders over dead_letter_states, the event part over dead_letters.
    const both = statusWalkOf({ statuses: ['EXHAUSTED'], queues: ['orders'], attempts: { min: 2 } })!;
    expect(both.where.sql).toContain('d.attempts');
    expect(both.where.sql).not.toContain('d.queue');
    expect(both.statusWalk.eventWhere!.sql).toContain('d.queue');
    expect(both.statusWalk.eventWhere!.sql).not.toMatch(/d\.(attempts|status)/);
  });

  it('finds a status that is rare among recent events without walking the recent ones', async () => {
    // 3,000 successes newer than every EXHAUSTED event: walking the created index, the newest
    // EXHAUSTED page would look up the state of each of them first.
    await t.db.$executeRaw`insert into dead_letters (event_type, queue, status, attempts, next_attempt_at, resolved_at, created_at)
                           select 'recent', 'orders', 'SUCCEEDED', 1, null, now(), ${hours(100)}::timestamptz + g * interval '1 second'
                             from generate_series(1, 3000) g`;
    await t.db.$executeRaw`analyze dead_letters`;
    await t.db.$executeRaw`analyze dead_letter_states`;
    const run = async (filter: DeadLetterFilter, walk: boolean) => {
      const sql = deadLetterPageSql({ where: deadLetterWhereSql(filter), field: 'CREATED_AT', descending: true, after: null, limit: 2, ...(walk ? statusWalkOf(filter) : {}) });
      const [plan] = await runSql<{ 'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(
        t.db, Prisma.sql`explain (analyze, buffers, format json) ${sql}`);
      const { Plan } = plan!['QUERY PLAN'][0];
      return { ids: (await runSql<{ id: bigint }>(t.db, sql)).map((r) => String(r.id)), buffers: Plan['Shared Hit Blocks'] + Plan['Shared Read Blocks'] };
    };
    // b is the one EXHAUSTED row, in queue orders; the 3,000 are in orders too.
    for (const filter of [{ statuses: ['EXHAUSTED'] }, { statuses: ['EXHAUSTED'], queues: ['orders'] }] satisfies DeadLetterFilter[]) {
      const viaView = await run(filter, false);
      const walked = await run(filter, true);
      expect(walked.ids).toEqual([ids.b!.toString()]);
      expect(walked.ids).toEqual(viaView.ids);
      // A buffer or two per row of the page and its index pages, whatever lies between. (The view's
      // plan depends on the statistics: here, with one EXHAUSTED row in 3,007, PostgreSQL finds it by
      // status itself; at 1% of 1M rows it walked the created index over 900,000 rows, and the
      // queue's index over 200,000 with a queue.)
      expect(walked.buffers).toBeLessThan(100);
    }
    // What readCreatedPage weighs: here the queue's 3,000 events against one EXHAUSTED state row.
    const walk = statusWalkOf({ statuses: ['EXHAUSTED'], queues: ['orders'] })!;
    const events = await estimateRows(t.db, 'dead_letters', walk.statusWalk.eventWhere!);
    const states = await estimateRows(t.db, 'dead_letter_states', walk.where);
    expect(events).toBeGreaterThan(2_000);
    expect(states).toBeLessThan(10);
  });

  it('pages successes older than every other event in order, and collects them instead of walking the newer events', async () => {
    // d and f (hours 26 and 30) are SUCCEEDED; 3,000 failures newer than every seeded row fill the
    // first step's window, so the page is found by collecting the successes.
    await t.db.$executeRaw`insert into dead_letters (event_type, queue, status, attempts, next_attempt_at, created_at)
                           select 'recent', 'orders', 'EXHAUSTED', 5, null, ${hours(100)}::timestamptz + g * interval '1 second'
                             from generate_series(1, 3000) g`;
    await t.db.$executeRaw`analyze dead_letters`;
    await t.db.$executeRaw`analyze dead_letter_states`;
    const filters: [string[], { eventTypes?: string[]; queues?: string[] }][] = [[['SUCCEEDED'], {}], [['SUCCEEDED', 'RESOLVED'], { eventTypes: ['order.shipped', 'user.signup'] }], [['SUCCEEDED'], { queues: ['shipping', 'default'] }]];
    for (const [statuses, more] of filters) {
      const filter = { statuses, ...more };
      const where = { status: { in: statuses as never[] }, eventType: more.eventTypes ? { in: more.eventTypes } : undefined, queue: more.queues ? { in: more.queues } : undefined };
      const newest = (await t.db.deadLetter.findMany({ where, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: { id: true } })).map((r) => r.id.toString());
      expect(newest.length).toBeGreaterThan(1);
      expect(await walkStatus(filter, 'DESC', false)).toEqual(newest);
      expect(await walkStatus(filter, 'DESC', true)).toEqual(newest);
      expect(await walkStatus(filter, 'ASC', false)).toEqual([...newest].reverse());
    }
    // The second step's statement reads the successes, not the 3,000 newer events.
    const filter: DeadLetterFilter = { statuses: ['SUCCEEDED'] };
    const sql = deadLetterPageSql({ where: deadLetterWhereSql(filter), field: 'CREATED_AT', descending: true, after: null, limit: 2, ...statusWalkOf(filter, { succeeded: true }) });
    const [plan] = await runSql<{ 'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(
      t.db, Prisma.sql`explain (analyze, buffers, format json) ${sql}`);
    const { Plan } = plan!['QUERY PLAN'][0];
    expect((await runSql<{ id: bigint }>(t.db, sql)).map((r) => String(r.id))).toEqual([ids.f!.toString(), ids.d!.toString()]);
    expect(Plan['Shared Hit Blocks'] + Plan['Shared Read Blocks']).toBeLessThan(100);
    expect(statusWalkOf(filter)).toBeUndefined(); // without `succeeded`, as the first step leaves it
  });
});
