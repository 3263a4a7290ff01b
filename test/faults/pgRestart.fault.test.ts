// Fault: PostgreSQL restarts under the service. The service must never exit, must report itself
// not ready and fail requests fast with a coded error while the database is gone, and must
// recover by itself with nothing lost once it is back. The second scenario restarts it under a
// steady stream of inserts with subscribers connected: every committed row reaches each of them
// exactly once, in order, and a subscriber resuming with a cursor from before the restart too.
// The third restarts it mid-drain, with deliveries in flight that succeed while it is down: their
// outcomes are written once it is back, so no event is delivered twice (issue 32 item 8).
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from '../../src/db/embeddedPostgres.ts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveriesById } from '../helpers/faults.ts';
import { startSink } from '../helpers/sink.ts';
import { idsInCursorOrder, sseSubscriber, subscribeAll, CHANGED_AFTER, type Subscriber } from '../helpers/feedSubscribers.ts';
import { freePort } from '../helpers/postgres.ts';
import { postGraphQL, startService, type ServiceProcess } from '../helpers/serviceProcess.ts';

let server: EmbeddedPostgres;
let dir: string;
let databaseUrl: string;
let service: ServiceProcess | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lazarus-fault-pg-'));
  await chmod(dir, 0o777);
  const port = await freePort();
  server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  await server.createDatabase('lazarus');
  databaseUrl = `postgresql://postgres:postgres@127.0.0.1:${port}/lazarus`;
});

let subscribers: Subscriber[] = [];

afterAll(async () => {
  for (const s of subscribers) s.close();
  await service?.stop('SIGKILL');
  await server.stop();
  await rm(dir, { recursive: true, force: true });
});

async function status(path: string): Promise<number> {
  return (await fetch(`${service!.url}${path}`)).status;
}

async function until<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs: number): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (accept(value)) return { value, ms: Date.now() - started };
    if (Date.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms (last: ${JSON.stringify(value)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('PostgreSQL restarts under the service', () => {
  it('stays up, reports not ready, fails fast with SERVICE_UNAVAILABLE, and recovers with every row', async () => {
    service = await startService({ DATABASE_URL: databaseUrl, DATABASE_POOL_ACQUIRE_TIMEOUT_MS: '1000' });
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(`INSERT INTO dead_letters (event_type, error_message) SELECT 'order.placed', 'row ' || i FROM generate_series(1, 50) i`);
    await client.end();
    expect(await status('/ready')).toBe(200);

    await server.stop();

    const notReady = await until(() => status('/ready'), (s) => s === 503, 10_000);
    const started = Date.now();
    const during = await postGraphQL(service.url, '{ deadLetters { totalCount } }');
    const failMs = Date.now() - started;
    expect(await status('/health')).toBe(200);
    expect(notReady.value).toBe(503);
    expect(during.status).toBe(503);
    expect(during.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
    expect(failMs).toBeLessThan(6_000);

    await server.start();

    await until(() => status('/ready'), (s) => s === 200, 30_000);
    const after = await postGraphQL(service.url, '{ deadLetters { totalCount } }');
    expect(after.body).toEqual({ data: { deadLetters: { totalCount: 50 } } });
    expect(service.child.exitCode).toBeNull();
    expect(await service.stop()).toBe(0);
  });
});

describe('PostgreSQL restarts under a stream of inserts with subscribers connected', () => {
  it('keeps inserting before and after, goes not ready and back, and every subscriber gets every committed row once, in order', async () => {
    service = await startService({ DATABASE_URL: databaseUrl, DATABASE_POOL_ACQUIRE_TIMEOUT_MS: '1000', RETRY_ENABLED: 'false' });
    const sql = new pg.Pool({ connectionString: databaseUrl, max: 2, connectionTimeoutMillis: 1_000 });
    sql.on('error', () => {}); // idle connections break when the server stops
    try {
      subscribers = await subscribeAll(service.url, sql);
      const acknowledged: string[] = [];
      let failed = 0;
      let producing = true;
      const producer = (async () => {
        while (producing) {
          try {
            const { rows } = await sql.query<{ id: string }>(`insert into dead_letters (event_type, payload) values ('restart.load', '{}') returning id::text`);
            acknowledged.push(rows[0]!.id);
          } catch {
            failed += 1; // the database is away; a producer would retry
            await new Promise((r) => setTimeout(r, 50));
          }
        }
      })();
      const acknowledgedAtLeast = (n: number) => until(async () => acknowledged.length, (count) => count >= n, 30_000);

      await acknowledgedAtLeast(100);
      await subscribers[0]!.until(50);
      const resumeFrom = { cursor: subscribers[0]!.cursors[49]!, id: subscribers[0]!.ids[49]! };
      await server.stop();
      await until(() => status('/ready'), (s) => s === 503, 10_000);
      const beforeRestart = acknowledged.length;
      await server.start();
      const ready = await until(() => status('/ready'), (s) => s === 200, 30_000);
      console.log(`PostgreSQL restart under load: ready again ${ready.ms} ms after PostgreSQL started; ${failed} inserts refused meanwhile`);
      await acknowledgedAtLeast(beforeRestart + 100);
      producing = false;
      await producer;
      expect(failed).toBeGreaterThan(0);

      // The table is the truth: every acknowledged insert is there (a commit whose reply was lost
      // may be there too); each subscriber must have exactly the table's rows, in cursor order.
      const committed = await idsInCursorOrder(sql, 'restart.load');
      expect(committed).toEqual(expect.arrayContaining(acknowledged));
      const resumed = await sseSubscriber(service.url, 'sse deadLetterChanged(after: a pre-restart cursor)', CHANGED_AFTER, { after: resumeFrom.cursor });
      subscribers.push(resumed);
      for (const s of subscribers) {
        const expected = s === resumed ? committed.slice(committed.indexOf(resumeFrom.id) + 1) : committed;
        await s.until(expected.length, 30_000);
        expect({ name: s.name, ids: s.ids, errors: s.errors }).toEqual({ name: s.name, ids: expected, errors: [] });
      }
      expect(service.child.exitCode).toBeNull();
      expect(await service.stop()).toBe(0);
    } finally {
      await sql.end();
    }
  });
});

describe('PostgreSQL restarts mid-drain with deliveries in flight', () => {
  it('records the successes made while it was down once it is back: every event SUCCEEDED, none delivered twice', async () => {
    const EVENTS = 300;
    const IN_FLIGHT = 20;
    const sink = await startSink();
    const sql = new pg.Pool({ connectionString: databaseUrl, max: 2, connectionTimeoutMillis: 1_000 });
    sql.on('error', () => {});
    try {
      sink.hold();
      service = await startService({
        DATABASE_URL: databaseUrl, DATABASE_POOL_ACQUIRE_TIMEOUT_MS: '1000', RETRY_BATCH_SIZE: String(IN_FLIGHT),
        RETRY_CONCURRENCY: String(IN_FLIGHT), RETRY_POLL_INTERVAL_MS: '250',
      });
      await sql.query(`insert into retry_policies (event_type, target_kind, target_settings, allow_private_target, timeout_ms, updated_at)
                       values ('restart.drain', 'webhook', jsonb_build_object('url', $1::text), true, 60000, now())`, [sink.url]);
      await sql.query(`insert into dead_letters (event_type, payload) select 'restart.drain', jsonb_build_object('n', g) from generate_series(1, ${EVENTS}) g`);
      await until(async () => sink.heldCount, (n) => n === IN_FLIGHT, 20_000);

      await server.stop();
      await until(() => status('/ready'), (s) => s === 503, 10_000);
      sink.release(); // delivered while the database is down: the outcomes cannot be written yet
      await server.start();
      const drained = await until(async () => {
        const { rows } = await sql.query<{ n: number }>(`select count(*)::int as n from dead_letters_current where event_type = 'restart.drain' and status = 'SUCCEEDED'`).catch(() => ({ rows: [{ n: -1 }] }));
        return rows[0]!.n;
      }, (n) => n === EVENTS, 60_000);
      console.log(`PostgreSQL restart mid-drain: all ${EVENTS} events SUCCEEDED ${drained.ms} ms after PostgreSQL started`);

      const seen = deliveriesById(sink.requests);
      expect(seen.size).toBe(EVENTS);
      expect([...seen].filter(([, n]) => n > 1)).toEqual([]);
      expect(service.child.exitCode).toBeNull();
      expect(await service.stop()).toBe(0);
    } finally {
      await sql.end();
      await sink.close();
    }
  });
});
