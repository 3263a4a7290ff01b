// graphql-ws over WebSocket, auth at subscribe, forged NOTIFYs, attempts, stats and slow readers.
import { Writable } from 'node:stream';
import { createClient } from 'graphql-ws';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { encodeCursor } from '../src/live/changeCursor.ts';
import { deadLetterChanges } from '../src/live/subscriberStreams.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { startLiveServer, untilFed, type LiveServer } from './helpers/live.ts';
import { subscribeSse, type SseSubscription } from './helpers/sse.ts';

const t = useTestDatabase();
let sql: pg.Pool;
let live: LiveServer | undefined;
const cleanups: (() => unknown)[] = [];

beforeAll(() => {
  sql = testPool(t.url, { max: 2 });
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await live?.close();
  live = undefined;
});
afterAll(async () => {
  await sql.end();
});

const ADDED = 'subscription { deadLetterAdded { deadLetter { id eventType } } }';
const CHANGED_AFTER = 'subscription ($after: String) { deadLetterChanged(after: $after) { deadLetter { id eventType } } }';

async function sse<T>(query: string, variables: Record<string, unknown> = {}): Promise<SseSubscription<T>> {
  const s = await subscribeSse<T>(live!.url, query, variables);
  cleanups.push(() => s.close());
  return s;
}

function wsClient(url: string, connectionParams: Record<string, unknown> = {}) {
  const client = createClient({ url: url.replace('http', 'ws'), webSocketImpl: WebSocket, connectionParams, retryAttempts: 0, lazy: true });
  cleanups.push(() => client.dispose());
  return client;
}

describe('transports and auth', () => {
  it('streams over graphql-ws on the same /graphql endpoint', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const client = wsClient(live.url);
    // Resuming from the feed's current cursor delivers the row however the subscribe races the insert.
    const iterator = client.iterate<{ deadLetterChanged: { deadLetter: { id: string; eventType: string } } }>({
      query: CHANGED_AFTER,
      variables: { after: encodeCursor(live.feed.cursor()) },
    });
    const first = iterator.next();
    const row = await insertDeadLetter(t.db, { eventType: 'ws.works' });
    expect((await first).value).toEqual({ data: { deadLetterChanged: { deadLetter: { id: row.id.toString(), eventType: 'ws.works' } } } });
    await iterator.return?.();
  });

  it('applies the same query limits over graphql-ws as over HTTP', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const client = wsClient(live.url);
    const aliases = Array.from({ length: 11 }, (_, i) => `a${i}: deadLetterAdded { deadLetter { id } }`).join(' ');
    const tooDeep = 'subscription { deadLetterAdded { deadLetter { deliveryAttempts { a { b { c { d { e { f } } } } } } } } }';

    const outcomes = await Promise.all(
      [`subscription { ${aliases} }`, tooDeep].map(
        (query) =>
          new Promise<string>((resolve) => {
            client.subscribe({ query }, { next: (r) => resolve(JSON.stringify(r)), error: (e) => resolve(JSON.stringify(e)), complete: () => resolve('completed') });
          }),
      ),
    );

    expect(outcomes[0]).toMatch(/aliases limit of 10 exceeded/i);
    expect(outcomes[1]).toMatch(/depth limit of 8 exceeded/i);
  });

  it('refuses a WebSocket connection that does not authenticate, with 4403', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, authenticate: (request) => (request.headers.get('authorization') === 'Bearer good' ? { name: 'k', role: 'viewer' } : null) });
    const closed = new Promise<number>((resolve) => {
      const client = createClient({ url: live!.url.replace('http', 'ws'), webSocketImpl: WebSocket, retryAttempts: 0, on: { closed: (event) => resolve((event as { code: number }).code) } });
      cleanups.push(() => client.dispose());
      client.subscribe({ query: ADDED }, { next: () => {}, error: () => {}, complete: () => {} });
    });
    expect(await closed).toBe(4403);

    const allowed = wsClient(live.url, { authorization: 'Bearer good' });
    const iterator = allowed.iterate({ query: CHANGED_AFTER, variables: { after: encodeCursor(live.feed.cursor()) } });
    const first = iterator.next();
    const row = await insertDeadLetter(t.db);
    expect((await first).value).toMatchObject({ data: { deadLetterChanged: { deadLetter: { id: row.id.toString() } } } });
    await iterator.return?.();
  });

  it('refuses an unauthenticated SSE subscription with HTTP 401 UNAUTHENTICATED, before any stream opens', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, authenticate: () => null });
    const response = await fetch(live.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: ADDED }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).not.toContain('text/event-stream');
    expect((await response.json()).errors[0].extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
  });
});

describe('bad input on the channel and slow readers', () => {
  it('logs and ignores forged or garbage NOTIFYs and keeps streaming', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }));
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, logger, fallbackPollMs: 600_000 });
    const s = await sse<{ deadLetterAdded: { deadLetter: { id: string; eventType: string } } }>(ADDED);
    for (const payload of ['garbage', '{"t":"dead_letters","max":"1; drop"}', '{"t":"users","max":5}', '[]', 'null', '{"t":"dead_letters"}', 'x'.repeat(7000)]) {
      await sql.query(`select pg_notify('lazarus_changes', $1)`, [payload]);
    }
    await sql.query(`notify lazarus_changes`);
    const row = await insertDeadLetter(t.db);
    expect(await s.next()).toEqual({ data: { deadLetterAdded: { deadLetter: { id: row.id.toString(), eventType: 'order.placed' } } } });
    expect(live.listener.isConnected()).toBe(true);
    expect(lines.filter((l) => l.includes('ignored a NOTIFY'))).toHaveLength(8);
  });

  it('streams delivery attempts whose dead letter matches the filter', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const s = await sse<{ deliveryAttemptFinished: { attempt: { attemptNumber: number; outcome: string }; deadLetter: { id: string } } }>(
      `subscription { deliveryAttemptFinished(filter: { queues: ["billing"] }) { attempt { attemptNumber outcome } deadLetter { id } } }`,
    );
    const other = await insertDeadLetter(t.db, { queue: 'default' });
    const billing = await insertDeadLetter(t.db, { queue: 'billing' });
    await t.db.deliveryAttempt.create({ data: { deadLetterId: other.id, attemptNumber: 1, workerId: 'w', durationMs: 3, outcome: 'FAILED' } });
    await t.db.deliveryAttempt.create({ data: { deadLetterId: billing.id, attemptNumber: 1, workerId: 'w', durationMs: 3, outcome: 'SUCCEEDED' } });
    expect(await s.next()).toEqual({
      data: { deliveryAttemptFinished: { attempt: { attemptNumber: 1, outcome: 'SUCCEEDED' }, deadLetter: { id: billing.id.toString() } } },
    });
  });

  it('sends counts at once and again after changes, at most once a second', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    await insertDeadLetter(t.db, { eventType: 'a' });
    const s = await sse<{ deadLetterStatsChanged: { total: number; byStatus: { status: string; count: number }[] } }>(
      `subscription { deadLetterStatsChanged(filter: { eventTypes: ["a"] }) { total byStatus { status count } } }`,
    );
    expect((await s.next()).data).toEqual({ deadLetterStatsChanged: { total: 1, byStatus: [{ status: 'PENDING', count: 1 }] } });
    const started = Date.now();
    for (let i = 0; i < 5; i++) await insertDeadLetter(t.db, { eventType: 'a' });
    await insertDeadLetter(t.db, { eventType: 'a', status: 'DISCARDED', resolvedBy: 'ops', resolvedAt: new Date(), nextAttemptAt: null });
    let latest = (await s.next()).data!.deadLetterStatsChanged;
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    while (latest.total < 7) latest = (await s.next()).data!.deadLetterStatsChanged;
    expect(latest).toEqual({ total: 7, byStatus: [{ status: 'PENDING', count: 6 }, { status: 'DISCARDED', count: 1 }] });
  });

  it('releases a subscription when its SSE client or WebSocket goes away', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const stream = await sse<unknown>(ADDED);
    const client = wsClient(live.url);
    const iterator = client.iterate({ query: CHANGED_AFTER, variables: { after: encodeCursor(live.feed.cursor()) } });
    const first = iterator.next();
    await insertDeadLetter(t.db);
    await first;
    await stream.next();
    expect(live.feed.events.listenerCount()).toBe(2);
    stream.close();
    await iterator.return?.();
    await client.dispose();
    await untilFed(live.feed, () => live!.feed.events.listenerCount() === 0);
  });

  it('ends a subscriber that falls more than maxQueuedEvents behind with SUBSCRIBER_TOO_SLOW', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, maxQueuedEvents: 5 });
    const stream = deadLetterChanges(live.feed, {}, { onlyNew: false });
    cleanups.push(() => stream.return!());
    for (let i = 0; i < 6; i++) await insertDeadLetter(t.db);
    await untilFed(live.feed, () => stream.isClosed);
    await expect(stream.next()).rejects.toMatchObject({ extensions: { code: 'SUBSCRIBER_TOO_SLOW' } });
  });
});
