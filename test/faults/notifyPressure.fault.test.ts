// Fault 9: notify pressure. A session LISTENs on lazarus_changes and then sits in an open
// transaction, so the cluster's notification queue cannot drain past it. The NOTIFY trigger skips
// its hint above a threshold (50% usage) so writers never fail at COMMIT, and the feed's catch-up
// still delivers every row.
//
// The first scenario fills the queue for real: a throwaway PostgreSQL 18 server with the smallest
// queue it allows (max_notify_queue_pages = 64, 512 KB; the setting exists from PostgreSQL 17), a
// stuck listener, and pg_notify until PostgreSQL refuses more. Inserts must still commit, and every
// row must still reach every subscriber.
//
// On the shared server (PostgreSQL 15's queue is a fixed 8 GB) the second scenario proves, with a
// real stuck listener: (a) the queue usage the trigger reads is the real one (it grows above 0 and a session
// that lowers the threshold to 0 sees its hints skipped); (b) the threshold branch at 50% (a
// simulated usage of 0.51 skips the hint, 0.5 does not); (c) a session can only make the trigger
// more careful; (d) inserts whose hints were skipped still reach every subscriber of a real
// service, exactly once, in order, while the stuck session is still stuck and after it ends.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { createDatabase } from '../helpers/databases.ts';
import { insertRows, subscribeAll, type Subscriber } from '../helpers/feedSubscribers.ts';
import { startEmbedded, type TestServer } from '../helpers/postgres.ts';
import { startService, type ServiceProcess } from '../helpers/serviceProcess.ts';

const t = useTestDatabase();
const clients: pg.Client[] = [];
let service: ServiceProcess | undefined;
let subscribers: Subscriber[] = [];
let smallQueueServer: TestServer | undefined;

async function client(url = t.url): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}

afterAll(async () => {
  for (const s of subscribers) s.close();
  await service?.stop('SIGKILL');
  for (const c of clients) await c.end().catch(() => {});
  await smallQueueServer?.stop();
});

/** Stops both the service and the subscribers of one scenario. */
async function endScenario() {
  for (const s of subscribers.splice(0)) s.close();
  await service?.stop('SIGKILL');
  service = undefined;
}

/** A plain LISTEN client that counts hints; `settle` proves all earlier hints have arrived. */
/** The service's own error group folds hint the same channel (groups ride the one feed): not the insert's. */
function isErrorGroupHint(payload: string | undefined): boolean {
  try {
    return (JSON.parse(payload ?? '') as { t?: string }).t === 'error_groups';
  } catch {
    return false;
  }
}

async function hintCounter() {
  const listener = await client();
  const hints: string[] = [];
  let markers = 0;
  let onMarker = () => {};
  listener.on('notification', (n) => {
    if (n.payload?.startsWith('marker')) {
      markers += 1;
      onMarker();
    } else if (!isErrorGroupHint(n.payload)) hints.push(n.payload ?? '');
  });
  await listener.query('LISTEN lazarus_changes');
  return {
    hints,
    /** Sends a marker from `writer` and waits for it: notifications arrive in commit order. */
    async settle(writer: pg.Client) {
      const want = markers + 1;
      const arrived = new Promise<void>((resolve) => (onMarker = () => markers >= want && resolve()));
      await writer.query(`select pg_notify('lazarus_changes', 'marker ' || $1)`, [String(want)]);
      await arrived;
    },
  };
}

/** Runs one INSERT under these session settings and says whether it sent a hint. */
async function hintsFromInsert(writer: pg.Client, counter: Awaited<ReturnType<typeof hintCounter>>, settings: Record<string, string>) {
  for (const [name, value] of Object.entries({ 'lazarus.notify_queue_usage_override': '', 'lazarus.notify_queue_threshold': '', ...settings })) {
    await writer.query('select set_config($1, $2, false)', [name, value]);
  }
  const before = counter.hints.length;
  // The insert's transaction first waits for the hint turn (migration 20261208100000): the service's
  // own error group folds take it too, and a writer that finds it taken sends no hint by design.
  await writer.query('begin');
  await writer.query('select pg_advisory_xact_lock(1281450066, 1)');
  const [id] = await insertRows(writer, 1, 'pressure');
  await writer.query('commit');
  await counter.settle(writer);
  return { id: id!, hinted: counter.hints.length - before };
}

describe('notify pressure', () => {
  it('keeps inserts committing while a stuck listener has filled the real notification queue, and delivers every row', async () => {
    smallQueueServer = await startEmbedded(['-c', 'max_notify_queue_pages=64']);
    const url = await createDatabase(smallQueueServer.adminUrl, 'lazarus');
    service = await startService({ DATABASE_URL: url, RETRY_ENABLED: 'false' });
    const observer = await client(url);
    subscribers = await subscribeAll(service.url, observer);
    const stuck = await client(url);
    await stuck.query('LISTEN lazarus_changes');
    await stuck.query('begin');
    await stuck.query('select 1');

    // Fill the queue until PostgreSQL refuses a NOTIFY at commit.
    let refused: (Error & { code?: string }) | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      await observer.query(`select pg_notify('lazarus_pressure_fill', repeat('x', 7900)) from generate_series(1, 8)`)
        .catch((error: Error & { code?: string }) => void (refused = error));
    }
    expect(refused?.message).toMatch(/too many notifications in the NOTIFY queue/);
    expect((await observer.query<{ u: number }>('select pg_notification_queue_usage() as u')).rows[0]!.u).toBeGreaterThan(0.9);

    // A full queue fails every COMMIT that sends a NOTIFY; the trigger sends none above 50%.
    const writer = await client(url);
    const ids = await insertRows(writer, 200, 'pressure');
    expect(ids).toHaveLength(200);
    for (const s of subscribers) {
      await s.until(200);
      expect({ name: s.name, ids: s.ids, errors: s.errors }).toEqual({ name: s.name, ids, errors: [] });
    }

    // The stuck session ends; the queue drains and hints flow again.
    await stuck.query('commit');
    await expect.poll(async () => (await observer.query<{ u: number }>('select pg_notification_queue_usage() as u')).rows[0]!.u).toBeLessThan(0.5);
    ids.push(...(await insertRows(writer, 1, 'pressure')));
    for (const s of subscribers) {
      await s.until(201);
      expect({ name: s.name, ids: s.ids, errors: s.errors }).toEqual({ name: s.name, ids, errors: [] });
    }
    expect(service.child.exitCode).toBeNull();
    await endScenario();
  });

  it('skips hints above the threshold without failing inserts, and catch-up still delivers every row', async () => {
    service = await startService({ DATABASE_URL: t.url, RETRY_ENABLED: 'false' });
    const observer = await client();
    subscribers = await subscribeAll(service.url, observer);
    const counter = await hintCounter();
    const writer = await client();

    // Normal conditions: every insert hints.
    expect((await hintsFromInsert(writer, counter, {})).hinted).toBe(1);

    // A listener stuck in an open transaction; 300 notifications (~70 KB) pile up behind it.
    const stuck = await client();
    await stuck.query('LISTEN lazarus_changes');
    await stuck.query('begin');
    await stuck.query('select 1');
    await observer.query(`select pg_notify('lazarus_pressure_fill', i || repeat('x', 200)) from generate_series(1, 300) i`);
    const usage = (await observer.query<{ u: number }>('select pg_notification_queue_usage() as u')).rows[0]!.u;
    expect(usage).toBeGreaterThan(0);
    expect((await observer.query<{ u: number }>('select lazarus_notify_queue_usage() as u')).rows[0]!.u).toBe(usage);

    const ids: string[] = [];
    const cases: [Record<string, string>, number][] = [
      [{}, 1], // real usage (tiny) is below 0.5
      [{ 'lazarus.notify_queue_threshold': '0' }, 0], // the real, non-zero usage is above a 0 threshold
      [{ 'lazarus.notify_queue_threshold': '0', 'lazarus.notify_queue_usage_override': '0' }, 0], // an override cannot hide real usage
      [{ 'lazarus.notify_queue_usage_override': '0.51' }, 0], // the 50% branch
      [{ 'lazarus.notify_queue_usage_override': '0.5' }, 1], // strictly above 50% only
      [{ 'lazarus.notify_queue_usage_override': '0.6', 'lazarus.notify_queue_threshold': '0.9' }, 0], // a threshold cannot be raised
      [{ 'lazarus.notify_queue_usage_override': 'lots', 'lazarus.notify_queue_threshold': '0; drop table x' }, 1], // garbage is ignored, never an error
    ];
    for (const [settings, expected] of cases) {
      const { id, hinted } = await hintsFromInsert(writer, counter, settings);
      expect({ settings, hinted }).toEqual({ settings, hinted: expected });
      ids.push(id);
    }

    // 200 more inserts with every hint skipped, while the stuck session is still stuck.
    await writer.query(`select set_config('lazarus.notify_queue_usage_override', '0.99', false)`);
    ids.push(...(await insertRows(writer, 200, 'pressure')));
    for (const s of subscribers) {
      await s.until(ids.length + 1);
      expect({ name: s.name, ids: s.ids.slice(1), errors: s.errors }).toEqual({ name: s.name, ids, errors: [] });
    }

    // The stuck session ends; the queue drains and hints flow again.
    await stuck.query('commit');
    await writer.query(`select set_config('lazarus.notify_queue_usage_override', '', false)`);
    const after = await hintsFromInsert(writer, counter, {});
    expect(after.hinted).toBe(1);
    ids.push(after.id);
    for (const s of subscribers) {
      await s.until(ids.length + 1);
      expect({ name: s.name, ids: s.ids.slice(1), errors: s.errors }).toEqual({ name: s.name, ids, errors: [] });
    }
    expect(service.child.exitCode).toBeNull();
  });
});
