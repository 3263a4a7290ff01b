import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import type { GraphQLServer } from '../src/api/server.ts';
import { trendWindowStart } from '../src/db/sql/errorGroupPage.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';
import { writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
let sql: pg.Pool;
let server: GraphQLServer;

beforeAll(() => {
  sql = testPool(t.url, { max: 4 });
  server = writeServer(t.handle);
});
afterAll(async () => {
  await sql.end();
});

/** `n` failures of group `name`, created `hoursAgo` hours ago (within that hour's first minutes). */
async function failures(name: string, n: number, hoursAgo: number): Promise<void> {
  await sql.query(
    `insert into dead_letters (event_type, error_kind, error_message, fingerprint, created_at)
     select 'order.placed', 'TIMEOUT', 'timed out', $1, date_trunc('hour', now()) - $2::int * interval '1 hour' + interval '1 minute'
       from generate_series(1, $3::int)`,
    [name, hoursAgo, n],
  );
}

const idOf = async (name: string) => (await sql.query<{ id: string }>(`select id::text from error_groups where signature = $1`, [name])).rows[0]!.id;

/** Every group by TREND through the API, in pages of 3 (so the keyset is walked too). */
async function trendOrder(): Promise<{ id: string; recentCount: number }[]> {
  const out: { id: string; recentCount: number }[] = [];
  let after: string | null = null;
  for (;;) {
    const { body }: { body: { data?: unknown; errors?: unknown } } = await execute(server, `query ($after: String) { errorGroups(orderBy: TREND, first: 3, after: $after) {
      edges { node { id recentCount } } pageInfo { hasNextPage endCursor } } }`, { after });
    expect(body.errors).toBeUndefined();
    const page: { edges: { node: { id: string; recentCount: number } }[]; pageInfo: { hasNextPage: boolean; endCursor: string } } = (body.data as any).errorGroups;
    out.push(...page.edges.map((e) => e.node));
    if (!page.pageInfo.hasNextPage) return out;
    after = page.pageInfo.endCursor;
  }
}

/** The same order from a scan of the hours: events in this UTC hour and the 23 before it. */
async function scanOrder(): Promise<{ id: string; recentCount: number }[]> {
  const { rows } = await sql.query<{ id: string; n: number }>(`
    select g.id::text, coalesce(sum(h.count) filter (where h.bucket >= date_trunc('hour', now(), 'UTC') - interval '23 hours'), 0)::int as n
      from error_groups g left join error_group_hours h on h.group_id = g.id
     group by g.id order by n desc, g.id desc`);
  return rows.map((r) => ({ id: r.id, recentCount: r.n }));
}

/** Moves every hour `hours` back, as if that much time had passed since the last fold. */
async function letHoursPass(hours: number): Promise<void> {
  await sql.query(`update error_group_hours set bucket = bucket - $1::int * interval '1 hour'`, [hours]);
  await sql.query(`update error_group_trend_window set start = start - $1::int * interval '1 hour'`, [hours]);
}

/** The folder's window is this hour's (so pages walk the index) and every kept count equals its hours' sum. */
async function expectKeptForThisHour(): Promise<void> {
  const { rows } = await sql.query<{ start: Date }>(`select start from error_group_trend_window`);
  expect(rows.map((r) => r.start)).toEqual([trendWindowStart(new Date())]);
  const wrong = await sql.query(`select g.signature, g.trend_count::int as kept,
      coalesce((select sum(count) from error_group_hours h where h.group_id = g.id and h.bucket >= (select start from error_group_trend_window)), 0)::int as hours
    from error_groups g`);
  expect(wrong.rows.filter((r) => r.kept !== r.hours)).toEqual([]);
}

describe('errorGroups(orderBy: TREND)', () => {
  it('orders by the events of the last 24 hours as a scan of the hours does, also after the window slides', async () => {
    await failures('leaving soon', 9, 23); // the window's oldest hour
    await failures('leaving soon', 1, 2);
    await failures('steady', 6, 5);
    await failures('fresh', 4, 0);
    await failures('old', 20, 30); // outside the window from the start
    for (let i = 0; i < 6; i++) await failures(`small ${i}`, 1 + (i % 3), i * 4);
    await foldErrorGroupLedger(t.db);

    await expectKeptForThisHour();
    const before = await trendOrder();
    expect(before).toEqual(await scanOrder());
    expect(before.slice(0, 3)).toEqual([
      { id: await idOf('leaving soon'), recentCount: 10 },
      { id: await idOf('steady'), recentCount: 6 },
      { id: await idOf('fresh'), recentCount: 4 },
    ]);
    expect(before.find((g) => g.recentCount === 0)).toBeDefined(); // 'old' is listed, with nothing recent

    const leavingSoon = await idOf('leaving soon');
    // Two hours later the 23-hour-old events have left the window; the next fold slides it.
    await letHoursPass(2);
    await failures('old', 5, 1); // a late event inside the window
    await failures('steady', 50, 40); // a backdated event outside it
    await foldErrorGroupLedger(t.db);
    const after = await trendOrder();
    expect(after).toEqual(await scanOrder());
    expect(after.slice(0, 3)).toEqual([
      { id: await idOf('steady'), recentCount: 6 },
      { id: await idOf('old'), recentCount: 5 },
      { id: await idOf('fresh'), recentCount: 4 },
    ]);
    expect(after.find((g) => g.id === leavingSoon)).toEqual({ id: leavingSoon, recentCount: 1 });
    await expectKeptForThisHour();
  });

  it('reads the kept count when the window is this hour’s and sums the hours when it is not', async () => {
    await failures('a', 3, 1);
    await failures('b', 2, 1);
    await foldErrorGroupLedger(t.db);
    const [a, b] = [await idOf('a'), await idOf('b')];
    // Spoil the kept count of a: a page that reads it shows the spoiled value, one that sums the hours does not.
    await sql.query(`update error_groups set trend_count = 0 where id = $1`, [a]);
    expect(await trendOrder()).toEqual([{ id: b, recentCount: 2 }, { id: a, recentCount: 0 }]);
    await sql.query(`update error_group_trend_window set start = start - interval '1 hour'`);
    expect(await trendOrder()).toEqual([{ id: a, recentCount: 3 }, { id: b, recentCount: 2 }]);
  });

  it('recomputes every group when the window row is missing', async () => {
    await failures('a', 3, 1);
    await failures('b', 5, 26);
    await foldErrorGroupLedger(t.db);
    await sql.query(`update error_groups set trend_count = 99`);
    await sql.query(`delete from error_group_trend_window`);
    await foldErrorGroupLedger(t.db);
    const { rows } = await sql.query(`select signature, trend_count::int as n from error_groups order by signature`);
    expect(rows).toEqual([{ signature: 'a', n: 3 }, { signature: 'b', n: 0 }]);
    expect(await trendOrder()).toEqual(await scanOrder());
  });
});
