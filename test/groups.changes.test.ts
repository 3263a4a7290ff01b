import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import { createCoalescer } from '../src/live/coalesceByKey.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';
import { startLiveServer, type LiveServer } from './helpers/live.ts';
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

describe('createCoalescer', () => {
  it('sends urgent values at once and routine ones at most once per window per key, the latest winning', () => {
    let clock = 0;
    type Timer = { at: number; fn: () => void };
    const timers = new Set<Timer>();
    const sent: string[] = [];
    const c = createCoalescer<string>({
      windowMs: 1000,
      emit: (v) => sent.push(v),
      now: () => clock,
      setTimer: (fn, ms) => {
        const timer = { at: clock + ms, fn };
        timers.add(timer);
        return timer;
      },
      clearTimer: (timer) => timers.delete(timer as Timer),
    });
    const advance = (to: number) => {
      clock = to;
      for (const timer of [...timers].filter((x) => x.at <= to)) {
        timers.delete(timer);
        timer.fn();
      }
    };
    c.push('a', 'a count 1', false); // first for the key: at once
    c.push('a', 'a count 2', false); // held
    c.push('b', 'b count 1', false); // another key: at once
    advance(400);
    c.push('a', 'a count 3', false); // replaces the held one
    expect(sent).toEqual(['a count 1', 'b count 1']);
    advance(1000);
    expect(sent).toEqual(['a count 1', 'b count 1', 'a count 3']);
    c.push('a', 'a regressed', true); // urgent: inside the window, still at once
    expect(sent.at(-1)).toBe('a regressed');
    c.push('a', 'a count 4', false);
    c.push('a', 'a resolved', true); // drops the held count: the urgent event carries the latest state
    advance(5000);
    expect(sent).toEqual(['a count 1', 'b count 1', 'a count 3', 'a regressed', 'a resolved']);
  });
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
    const { rows } = await sql.query<{ id: string }>(`select error_group_id::text as id from lazarus_dead_letters where event_type = 'order.placed' limit 1`);
    const id = rows[0]!.id;

    const operator = writeServer(t.handle);
    await execute(operator, 'mutation ($input: ErrorGroupMoveInput!) { acknowledgeErrorGroup(input: $input) { __typename } }', { input: { id, reason: 'on it' } });
    expect(await next()).toMatchObject({ kind: 'STATUS_CHANGED', fromStatus: 'OPEN', reason: 'on it', group: { status: 'ACKNOWLEDGED' } });

    await sql.query(`update lazarus_dead_letters set status = 'SUCCEEDED' where event_type = 'order.placed'`);
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

  it('serves every subscriber from one shared reader: one read per change, not one per subscriber', async () => {
    // The reader reads only when NOTIFY wakes it (no timer reads within the test).
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, errorGroupPollMs: 600_000 });
    const reader = live.errorGroupChanges;
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
    expect(reader.subscriberCount()).toBe(N);
    expect(reader.reads()).toBe(1); // one baseline, read by the first subscriber

    await sql.query(`insert into dead_letters (event_type, error_kind, error_message) values ('order.placed', 'TIMEOUT', 'timed out')`);
    await foldErrorGroupLedger(t.db); // one transaction: one NOTIFY
    for (const s of subs) expect((await s.next()).data!.errorGroupChanged).toEqual({ kind: 'CREATED', fromStatus: null, group: { eventType: 'order.placed', status: 'OPEN', count: 1 } });
    const afterCreated = reader.reads();
    expect(afterCreated - 1).toBeGreaterThanOrEqual(1);
    expect(afterCreated - 1).toBeLessThanOrEqual(2); // a NOTIFY during the read costs one more, never one per subscriber

    const { rows } = await sql.query<{ id: string }>(`select id::text from error_groups`);
    await execute(writeServer(t.handle), 'mutation ($input: ErrorGroupMoveInput!) { acknowledgeErrorGroup(input: $input) { __typename } }', { input: { id: rows[0]!.id } });
    for (const s of subs) expect((await s.next()).data!.errorGroupChanged).toMatchObject({ kind: 'STATUS_CHANGED', fromStatus: 'OPEN', group: { status: 'ACKNOWLEDGED' } });
    expect(reader.reads() - afterCreated).toBeGreaterThanOrEqual(1);
    expect(reader.reads() - afterCreated).toBeLessThanOrEqual(2);

    // When the last subscriber leaves the reader stops; the next one reads a new baseline.
    for (const s of subs) s.close();
    await vi.waitFor(() => expect(reader.subscriberCount()).toBe(0), { timeout: 10_000 });
    const beforeRejoin = reader.reads();
    const again = await subscribeSse<Change>(live.url, `subscription { errorGroupChanged { kind } }`);
    open.push(again as SseSubscription<unknown>);
    expect(reader.reads()).toBe(beforeRejoin + 1);
    expect(reader.subscriberCount()).toBe(1);
  });
});
