// The listener's health: readiness while LISTEN is down, the NOTIFY self-probe and heartbeat, the
// polling fallback, listener metrics, and SSE frames shared between subscribers.
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createChangeListener, type ChangeListener } from '../src/live/changeListener.ts';
import { createListenerHealth, type ListenerHealth } from '../src/live/listenerHealth.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';
import { startLiveServer, type LiveServer } from './helpers/live.ts';
import { startService, type ServiceProcess } from './helpers/serviceProcess.ts';

const t = useTestDatabase();
let sql: pg.Pool;
const cleanups: (() => Promise<unknown> | unknown)[] = [];

beforeAll(() => {
  sql = testPool(t.url, { max: 2 });
});
afterEach(async () => {
  for (const undo of cleanups.splice(0).reverse()) await undo();
});
afterAll(async () => {
  await sql.end();
});

async function admin(query: string, values: unknown[] = []): Promise<void> {
  const client = new pg.Client({ connectionString: inject('adminUrl') });
  await client.connect();
  await client.query(query, values).finally(() => client.end());
}

async function readyStatus(url: string): Promise<number> {
  return (await fetch(`${url}/ready`)).status;
}

describe('readiness and listener metrics of the running service', () => {
  it('answers /ready with 503 while the LISTEN connection is down, 200 once it is back, and counts the reconnect', async () => {
    const service: ServiceProcess = await startService({ DATABASE_URL: t.url, RETRY_ENABLED: 'false' });
    cleanups.push(() => service.stop());
    await vi.waitFor(async () => expect(await readyStatus(service.url)).toBe(200), { timeout: 15_000, interval: 50 });
    const database = new URL(t.url).pathname.slice(1);

    // No new sessions may connect, so the listener cannot come back until this is lifted.
    await admin(`alter database "${database}" with allow_connections false`);
    cleanups.push(() => admin(`alter database "${database}" with allow_connections true`));
    await admin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and application_name = 'lazarus-listener'`, [database]);
    await vi.waitFor(async () => expect(await readyStatus(service.url)).toBe(503), { timeout: 15_000, interval: 50 });

    await admin(`alter database "${database}" with allow_connections true`);
    await vi.waitFor(async () => expect(await readyStatus(service.url)).toBe(200), { timeout: 30_000, interval: 100 });
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/^lazarus_listener_reconnects_total 1$/m);
    expect(metrics).toMatch(/^lazarus_listener_connected 1$/m);
    expect(metrics).toMatch(/^lazarus_change_feed_catch_ups_total 2$/m);
    expect(metrics).toMatch(/^lazarus_change_feed_degraded 0$/m);
  }, 60_000);
});

describe('the NOTIFY self-probe and heartbeat', () => {
  let listener: ChangeListener;
  let delivered: boolean;
  let pollMs: number[];

  const startHealth = async (): Promise<ListenerHealth> => {
    listener = createChangeListener({ url: t.url, logger: pino({ level: 'silent' }) });
    await listener.start();
    cleanups.push(() => listener.stop());
    pollMs = [];
    const health = createListenerHealth({
      listener,
      logger: pino({ level: 'silent' }),
      feed: { setFallbackPollMs: (ms) => void pollMs.push(ms) },
      normalPollMs: 1_000,
      degradedPollMs: 100,
      intervalMs: 50,
      timeoutMs: 1_000,
      // A NOTIFY that never reaches the LISTEN session, as behind PgBouncer in transaction mode.
      notify: async (channel, payload) =>
        void (await sql.query('select pg_notify($1, $2)', [delivered ? channel : 'lazarus_probe_nowhere', payload])),
    });
    cleanups.push(() => health.stop());
    await health.start();
    return health;
  };

  it('passes at start-up when NOTIFY reaches the listener, and the feed keeps its normal rate', async () => {
    delivered = true;
    const health = await startHealth();
    expect(health.state()).toBe('ok');
    expect(health.stats()).toMatchObject({ probeFailures: 0, forcedReconnects: 0 });
    expect(pollMs).toEqual([]);
  });

  it('reports degraded and makes the feed poll when the start-up probe never comes back, and recovers', async () => {
    delivered = false;
    const health = await startHealth();
    expect(health.state()).toBe('degraded');
    expect(pollMs).toEqual([100]);
    expect(listener.reconnects()).toBe(0);

    delivered = true;
    await vi.waitFor(() => expect(health.state()).toBe('ok'), { timeout: 10_000, interval: 20 });
    expect(pollMs).toEqual([100, 1_000]);
  });

  it('reconnects the listener once when a heartbeat probe is lost, then falls back to polling if it is lost again', async () => {
    delivered = true;
    const health = await startHealth();
    delivered = false;
    await vi.waitFor(() => expect(health.state()).toBe('degraded'), { timeout: 10_000, interval: 20 });
    expect(health.stats().forcedReconnects).toBe(1);
    expect(listener.reconnects()).toBe(1);
    expect(listener.isConnected()).toBe(true);
    expect(pollMs).toEqual([100]);
  });
});

describe('SSE frames', () => {
  let live: LiveServer;

  it('sends events queued together as one write, byte-identical for subscribers of the same operation', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    cleanups.push(() => live.close());
    const subscribe = () =>
      live.yoga.fetch('http://localhost/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ query: 'subscription { deadLetterAdded { deadLetter { eventType } } }' }),
      });
    const readers = await Promise.all([subscribe(), subscribe()].map(async (r) => (await r).body!.getReader()));
    cleanups.push(() => Promise.all(readers.map((r) => r.cancel())));
    const decoder = new TextDecoder();
    for (const reader of readers) expect(decoder.decode((await reader.read()).value)).toBe(':\n\n');
    const chunks = readers.map((r) => r.read());

    await sql.query(`insert into dead_letters (event_type, payload) select 'probe.' || n, '{}' from generate_series(1, 3) n`);
    const [a, b] = await Promise.all(chunks);
    const frame = (n: number) => `event: next\ndata: {"data":{"deadLetterAdded":{"deadLetter":{"eventType":"probe.${n}"}}}}\n\n`;
    expect(decoder.decode(a!.value)).toBe(frame(1) + frame(2) + frame(3));
    expect(Buffer.from(b!.value!).equals(Buffer.from(a!.value!))).toBe(true);
  });

  it('ends only the SSE subscriber that stopped reading with SUBSCRIBER_TOO_SLOW, and the shared stream goes on', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db, maxQueuedEvents: 5 });
    cleanups.push(() => live.close());
    const subscribe = async () =>
      (await live.yoga.fetch('http://localhost/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ query: 'subscription { deadLetterAdded { deadLetter { eventType } } }' }),
      })).body!.getReader();
    const [reader, stalled] = await Promise.all([subscribe(), subscribe()]);
    cleanups.push(() => reader.cancel());
    const decoder = new TextDecoder();
    let seen = '';
    const untilSeen = async (n: number) => {
      while ((seen.match(/event: next/g) ?? []).length < n) seen += decoder.decode((await reader.read()).value);
    };

    for (let i = 1; i <= 6; i++) {
      await sql.query(`insert into dead_letters (event_type, payload) values ($1, '{}')`, [`slow.${i}`]);
      await untilSeen(i);
    }
    let rest = '';
    for (let chunk = await stalled.read(); !chunk.done; chunk = await stalled.read()) rest += decoder.decode(chunk.value);
    expect(rest).toBe(':\n\nevent: next\ndata: {"errors":[{"message":"subscriber too slow: more than 5 events were waiting to be sent; resubscribe with the last cursor you received","extensions":{"code":"SUBSCRIBER_TOO_SLOW"}}]}\n\nevent: complete\ndata:\n\n');
    expect(live.feed.events.listenerCount()).toBe(1);
    await sql.query(`insert into dead_letters (event_type, payload) values ('slow.7', '{}')`);
    await untilSeen(7);
    expect(seen).toContain('"eventType":"slow.7"');
  });
});
