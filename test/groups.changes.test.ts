import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';
import { startLiveServer, untilFed, type LiveServer } from './helpers/live.ts';
import { subscribeSse, type SseSubscription } from './helpers/sse.ts';
import { writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
let sql: pg.Pool;
let live: LiveServer | undefined;
const open: SseSubscription<unknown>[] = [];

beforeAll(() => {
  sql = testPool(t.url, { max: 4 });
});
afterEach(async () => {
  for (const s of open.splice(0)) s.close();
  await live?.close();
  live = undefined;
});
afterAll(async () => {
  await sql.end();
});

type Change = { errorGroupChanged: { kind: string; fromStatus: string | null; reason: string | null; group: { eventType: string; status: string; count: number; unresolvedCount: number } } };

describe('errorGroupChanged', () => {
  it('streams a new group, status moves, a regression and count changes for the groups the filter matches', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const s = await subscribeSse<Change>(live.url,
      `subscription ($f: ErrorGroupFilter) { errorGroupChanged(filter: $f) { kind fromStatus reason group { eventType status count unresolvedCount } } }`,
      { f: { eventTypes: ['order.placed'] } });
    open.push(s as SseSubscription<unknown>);
    const insert = (eventType: string, n: number) => sql.query(
      `insert into dead_letters (event_type, error_kind, error_message) select $1, 'TIMEOUT', 'timed out after ' || i || ' ms' from generate_series(1, $2::int) i`, [eventType, n]);
    const next = async () => (await s.next()).data!.errorGroupChanged;

    await insert('order.placed', 2);
    await insert('not.watched', 1);
    await foldErrorGroupLedger(t.db);
    expect(await next()).toEqual({ kind: 'CREATED', fromStatus: null, reason: 'first seen', group: { eventType: 'order.placed', status: 'OPEN', count: 2, unresolvedCount: 2 } });
    const { rows } = await sql.query<{ id: string }>(`select error_group_id::text as id from dead_letters_current where event_type = 'order.placed' limit 1`);
    const id = rows[0]!.id;

    const operator = writeServer(t.handle);
    await execute(operator, 'mutation ($input: ErrorGroupMoveInput!) { acknowledgeErrorGroup(input: $input) { __typename } }', { input: { id, reason: 'on it' } });
    expect(await next()).toMatchObject({ kind: 'STATUS_CHANGED', fromStatus: 'OPEN', reason: 'on it', group: { status: 'ACKNOWLEDGED' } });

    await sql.query(`update dead_letters_current set status = 'SUCCEEDED' where event_type = 'order.placed'`);
    await foldErrorGroupLedger(t.db);
    expect(await next()).toMatchObject({ kind: 'STATUS_CHANGED', fromStatus: 'ACKNOWLEDGED', reason: 'no unresolved members', group: { status: 'RESOLVED', unresolvedCount: 0 } });

    await insert('order.placed', 1);
    await foldErrorGroupLedger(t.db);
    expect(await next()).toMatchObject({ kind: 'REGRESSED', fromStatus: 'RESOLVED', group: { status: 'OPEN', count: 3, unresolvedCount: 1 } });

    await insert('order.placed', 2);
    await foldErrorGroupLedger(t.db);
    await insert('order.placed', 1);
    await foldErrorGroupLedger(t.db);
    // Both folds' counts arrive, coalesced or not: the last event carries the latest counts.
    let change = await next();
    if (change.group.count !== 6) change = await next();
    expect(change).toMatchObject({ kind: 'COUNTS_CHANGED', fromStatus: null, group: { status: 'OPEN', count: 6, unresolvedCount: 4 } });

    const statuses = await execute(writeServer(t.handle), '{ errorGroups(filter: { eventTypes: ["not.watched"] }) { totalCount } }');
    expect(statuses.body).toEqual({ data: { errorGroups: { totalCount: 1 } } });
  });

  it('serves every subscriber from the one change feed: each change is read once, not once per subscriber', async () => {
    // The feed reads on hints only (no fallback reads within the test).
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, fallbackPollMs: 600_000 });
    const N = 6;
    const subs: SseSubscription<Change>[] = [];
    // Each with its own filter, so no two share an execution in the SSE fan-out; all match order.placed.
    for (let i = 0; i < N; i++) {
      const s = await subscribeSse<Change>(live.url,
        `subscription ($f: ErrorGroupFilter) { errorGroupChanged(filter: $f) { kind fromStatus group { eventType status count } } }`,
        { f: { eventTypes: ['order.placed', `other.${i}`] } });
      open.push(s as SseSubscription<unknown>);
      subs.push(s);
    }
    await untilFed(live.feed, () => live!.feed.events.listenerCount() === N);
    const before = live.feed.stats().published;

    await sql.query(`insert into dead_letters (event_type, error_kind, error_message) values ('order.placed', 'TIMEOUT', 'timed out')`);
    await foldErrorGroupLedger(t.db);
    for (const s of subs) expect((await s.next()).data!.errorGroupChanged).toEqual({ kind: 'CREATED', fromStatus: null, group: { eventType: 'order.placed', status: 'OPEN', count: 1 } });
    // The dead letter and the group's CREATED (its row's stamp in the same fold is not a second change).
    expect(live.feed.stats().published - before).toBe(2);

    const { rows } = await sql.query<{ id: string }>(`select id::text from error_groups`);
    await execute(writeServer(t.handle), 'mutation ($input: ErrorGroupMoveInput!) { acknowledgeErrorGroup(input: $input) { __typename } }', { input: { id: rows[0]!.id } });
    for (const s of subs) expect((await s.next()).data!.errorGroupChanged).toMatchObject({ kind: 'STATUS_CHANGED', fromStatus: 'OPEN', group: { status: 'ACKNOWLEDGED' } });
    expect(live.feed.stats().published - before).toBe(3);
  });
});

type Resumed = { errorGroupChanged: { cursor: string; kind: string; fromStatus: string | null; reason: string | null; group: { status: string; count: number; unresolvedCount: number } } };

describe('resuming errorGroupChanged with a cursor', () => {
  const query = `subscription ($after: String) { errorGroupChanged(filter: { eventTypes: ["order.placed"] }, after: $after) {
    cursor kind fromStatus reason group { status count unresolvedCount } } }`;
  const view = (m: { data?: Resumed | null }) => {
    const { cursor: _c, ...change } = m.data!.errorGroupChanged;
    return change;
  };
  const insert = (n: number) => sql.query(
    `insert into dead_letters (event_type, error_kind, error_message) select 'order.placed', 'TIMEOUT', 'timed out' from generate_series(1, $1::int)`, [n]);

  it('replays exactly the group changes missed while away, members’ deletions included, then continues live without duplicates', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const first = await subscribeSse<Resumed>(live.url, query);
    open.push(first as SseSubscription<unknown>);
    await insert(2);
    await foldErrorGroupLedger(t.db);
    const created = await first.next();
    expect(view(created)).toEqual({ kind: 'CREATED', fromStatus: null, reason: 'first seen', group: { status: 'OPEN', count: 2, unresolvedCount: 2 } });
    first.close();
    await live.close();
    live = undefined;

    // While away: an operator's move, a count change, and the members' deletion resolving the group.
    const { rows } = await sql.query<{ id: string }>(`select id::text from error_groups`);
    await execute(writeServer(t.handle), 'mutation ($input: ErrorGroupMoveInput!) { acknowledgeErrorGroup(input: $input) { __typename } }', { input: { id: rows[0]!.id, reason: 'on it' } });
    await insert(1);
    await foldErrorGroupLedger(t.db);
    await sql.query(`delete from dead_letters where event_type = 'order.placed'`);
    await foldErrorGroupLedger(t.db);

    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const resumed = await subscribeSse<Resumed>(live.url, query, { after: created.data!.errorGroupChanged.cursor });
    open.push(resumed as SseSubscription<unknown>);
    // Each move once, with the group as it is now; the count change in between coalesced into it.
    expect((await resumed.take(2)).map(view)).toEqual([
      { kind: 'STATUS_CHANGED', fromStatus: 'OPEN', reason: 'on it', group: { status: 'RESOLVED', count: 3, unresolvedCount: 0 } },
      { kind: 'STATUS_CHANGED', fromStatus: 'ACKNOWLEDGED', reason: 'no unresolved members', group: { status: 'RESOLVED', count: 3, unresolvedCount: 0 } },
    ]);
    await insert(1);
    await foldErrorGroupLedger(t.db);
    expect(view(await resumed.next())).toMatchObject({ kind: 'REGRESSED', fromStatus: 'RESOLVED', group: { status: 'OPEN', count: 4, unresolvedCount: 1 } });
    await insert(1);
    await foldErrorGroupLedger(t.db);
    expect(view(await resumed.next())).toEqual({ kind: 'COUNTS_CHANGED', fromStatus: null, reason: null, group: { status: 'OPEN', count: 5, unresolvedCount: 2 } });
  });

  it('refuses a cursor it did not issue, with BAD_USER_INPUT', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const s = await subscribeSse<Resumed>(live.url, query, { after: 'not-a-cursor' });
    open.push(s as SseSubscription<unknown>);
    expect((await s.next()).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
