import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { pino } from 'pino';
import { createDb } from '../src/db/createDb.ts';
import { decodeCursor } from '../src/live/changeCursor.ts';
import { createChangeFeed } from '../src/live/changeFeed.ts';
import { createChangeListener } from '../src/live/changeListener.ts';
import { createLivePubSub } from '../src/live/liveEvents.ts';
import type { ChangeBatch } from '../src/live/liveEvents.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';
import { startBlackholeProxy } from './helpers/blackholeProxy.ts';
import { startLiveServer, untilFed, type LiveServer } from './helpers/live.ts';
import { subscribeSse, type SseSubscription } from './helpers/sse.ts';

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

type Added = { deadLetterAdded: { cursor: string; deadLetter: { id: string; eventType: string } } };
const ADDED = `subscription ($filter: DeadLetterFilter) {
  deadLetterAdded(filter: $filter) { cursor deadLetter { id eventType } }
}`;

async function sse<T>(query: string, variables: Record<string, unknown> = {}) {
  const s = await subscribeSse<T>(live!.url, query, variables);
  open.push(s as SseSubscription<unknown>);
  return s;
}

async function insertRow(eventType = 'order.placed', client: pg.Pool | pg.PoolClient = sql): Promise<string> {
  const { rows } = await client.query<{ id: string }>(
    `insert into dead_letters (event_type, payload) values ($1, '{}') returning id::text`,
    [eventType],
  );
  return rows[0]!.id;
}

describe('the change feed', () => {
  it('delivers all 1,000 inserts exactly once and in order to every subscriber while the LISTEN connection is killed mid-burst', async () => {
    // No fallback polling here: only NOTIFY hints and the reconnect catch-up can deliver.
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, fallbackPollMs: 600_000 });
    let connects = 0;
    live.listener.onConnected(() => (connects += 1));
    const subscribers = await Promise.all([1, 2, 3].map(() => sse<Added>(ADDED)));

    const ids: string[] = [];
    for (let i = 0; i < 1000; i++) {
      if (i === 300) {
        const killed = await sql.query(
          `select pg_terminate_backend(pid) from pg_stat_activity
            where application_name = 'lazarus-listener' and datname = current_database()`,
        );
        expect(killed.rowCount).toBe(1);
      }
      ids.push(await insertRow());
    }

    for (const subscriber of subscribers) {
      const messages = await subscriber.take(1000, 30_000);
      expect(messages.map((m) => m.data!.deadLetterAdded.deadLetter.id)).toEqual(ids);
      const cursors = messages.map((m) => decodeCursor(m.data!.deadLetterAdded.cursor)!);
      for (let i = 1; i < cursors.length; i++) expect(cursors[i]!.changeId > cursors[i - 1]!.changeId).toBe(true);
    }
    expect(connects).toBe(1);
    expect(live.listener.isConnected()).toBe(true);
  });

  it('delivers rows of two transactions that commit out of change order, both once, in commit order', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, fallbackPollMs: 600_000 });
    const seen: string[] = [];
    live.feed.events.onBatch((batch: ChangeBatch) => seen.push(...batch.deadLetters.map((e) => e.deadLetter!.eventType)));
    const early = await sql.connect();
    const late = await sql.connect();
    try {
      await early.query('begin');
      await insertRow('first-stamped', early);
      await late.query('begin');
      await insertRow('second-stamped', late);
      await late.query('commit');
      await live.feed.caughtUp();
      // The earlier transaction is still open, so the later one's row is above the horizon.
      expect(seen).toEqual([]);
      await early.query('commit');
      await untilFed(live.feed, () => seen.length >= 2);
      await live.feed.caughtUp();
      expect(seen).toEqual(['first-stamped', 'second-stamped']);
    } finally {
      early.release();
      late.release();
    }
  });

  it('is not held back by an open transaction in another database of the same cluster', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, fallbackPollMs: 600_000 });
    const subscriber = await sse<Added>(ADDED);
    const elsewhere = new pg.Client({ connectionString: inject('adminUrl') });
    await elsewhere.connect();
    try {
      await elsewhere.query('begin');
      await elsewhere.query('select pg_current_xact_id()');
      const id = await insertRow();
      expect((await subscriber.next()).data!.deadLetterAdded.deadLetter.id).toBe(id);
    } finally {
      await elsewhere.query('rollback');
      await elsewhere.end();
    }
  });

  it('serves a row to a subscriber that arrived while a read without subscribers was moving the cursor past it', async () => {
    // One connection, held, so the feed's horizon read waits while the subscriber comes and the
    // row commits: the horizon's snapshot then covers the row.
    const small = createDb(t.url, { poolMax: 1, acquireTimeoutMs: 30_000, statementTimeoutMs: 15_000, applicationName: 'lazarus-test-feed' });
    const listener = createChangeListener({ url: t.url, logger: pino({ level: 'silent' }) });
    const feed = createChangeFeed({ db: small.db, listener, events: createLivePubSub(), logger: pino({ level: 'silent' }), fallbackPollMs: 600_000 });
    try {
      await feed.start();
      const held = await small.pool.connect();
      const read = feed.caughtUp();
      const seen: string[] = [];
      feed.events.onBatch((batch) => seen.push(...batch.deadLetters.map((e) => e.deadLetter!.id.toString())));
      const id = await insertRow();
      held.release();
      await read;
      await feed.caughtUp();
      expect(seen).toEqual([id]);
    } finally {
      await feed.stop();
      await small.close();
    }
  });

  it('notices a half-open LISTEN connection through its paranoid check, reconnects and catches up', async () => {
    const proxy = await startBlackholeProxy(t.url);
    try {
      // The dead connection is noticed after a check and its timeout; reconnect attempts then come
      // at most every 500 ms. On a loaded machine a 300 ms query timeout also failed the *new*
      // connection's checks, and the default backoff (up to 30 s) outlasted the test.
      live = await startLiveServer({
        databaseUrl: t.url, db: t.db, listenUrl: proxy.url, fallbackPollMs: 600_000, paranoidCheckMs: 300, queryTimeoutMs: 2_000, maxBackoffMs: 500,
      });
      const reconnected = new Promise<void>((resolve) => live!.listener.onConnected(resolve));
      const subscriber = await sse<Added>(ADDED);
      proxy.blackholeOpenConnections();
      const ids = [];
      for (let i = 0; i < 100; i++) ids.push(await insertRow());
      // No NOTIFY gets through and there is no fallback polling: only the reconnect catch-up delivers.
      await reconnected;
      const messages = await subscriber.take(100);
      expect(messages.map((m) => m.data!.deadLetterAdded.deadLetter.id)).toEqual(ids);
    } finally {
      await live?.close();
      live = undefined;
      await proxy.close();
    }
  });

  it('applies the filter to each subscriber', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const onlyPayments = await sse<Added>(ADDED, { filter: { eventTypes: ['payment.failed'], statuses: ['PENDING'] } });
    const everything = await sse<Added>(ADDED);
    await insertRow('order.placed');
    const paymentId = await insertRow('payment.failed');
    await insertRow('order.placed');

    expect((await everything.take(3)).map((m) => m.data!.deadLetterAdded.deadLetter.eventType)).toEqual([
      'order.placed',
      'payment.failed',
      'order.placed',
    ]);
    expect(await onlyPayments.next()).toEqual({
      data: { deadLetterAdded: { cursor: expect.any(String), deadLetter: { id: paymentId, eventType: 'payment.failed' } } },
    });
  });

  it('reads less often under a stream of hints the more subscribers it feeds, and loses nothing', async () => {
    // Fallback polling off: only hints trigger reads. 200 listeners space reads by 25 ms.
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, fallbackPollMs: 600_000 });
    const batches: ChangeBatch[] = [];
    const unsubscribe = Array.from({ length: 200 }, (_, i) => live!.feed.events.onBatch((batch) => i === 0 && batches.push(batch)));
    const started = performance.now();
    const ids: string[] = [];
    // 300 single-row commits over 4 connections: a hint each.
    await Promise.all([0, 1, 2, 3].map(async () => {
      for (let i = 0; i < 75; i++) ids.push(await insertRow());
    }));
    await untilFed(live.feed, () => batches.reduce((n, b) => n + b.deadLetters.length, 0) >= ids.length);
    const elapsed = performance.now() - started;
    for (const off of unsubscribe) off();

    expect(batches.flatMap((b) => b.deadLetters.map((e) => String(e.deadLetter!.id))).sort()).toEqual([...ids].sort());
    // One read per 25 ms at most, plus the first read of the burst and the catch-up reads.
    expect(batches.length).toBeLessThanOrEqual(Math.ceil(elapsed / 25) + 3);
    expect(batches.length).toBeLessThan(ids.length / 2);
  });
});
