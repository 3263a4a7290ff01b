import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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
});
