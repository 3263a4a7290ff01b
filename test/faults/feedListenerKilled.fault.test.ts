// Fault 3: the LISTEN connection is terminated by the server mid-burst of 1,000 inserts. Every
// subscriber, over SSE and over graphql-ws, must receive all 1,000 exactly once, in order.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPool, useTestDatabase } from '../helpers/db.ts';
import { idsInCursorOrder, insertRows, logged, subscribeAll, type Subscriber } from '../helpers/feedSubscribers.ts';
import { startService, type ServiceProcess } from '../helpers/serviceProcess.ts';

const t = useTestDatabase();
let sql: pg.Pool;
let service: ServiceProcess | undefined;
let subscribers: Subscriber[] = [];

beforeAll(() => {
  // Commits without waiting for fsync: the burst is about the feed, not the disk.
  sql = testPool(t.url, { max: 2, options: '-c synchronous_commit=off' });
});
afterAll(async () => {
  for (const s of subscribers) s.close();
  await service?.stop('SIGKILL');
  await sql.end();
});

describe('the LISTEN connection is terminated mid-burst', () => {
  it('delivers all 1,000 inserts exactly once and in order to every SSE and WebSocket subscriber', async () => {
    service = await startService({ DATABASE_URL: t.url, RETRY_ENABLED: 'false' });
    subscribers = await subscribeAll(service.url, sql);

    let terminated = 0;
    const ids = await insertRows(sql, 1000, 'order.placed', async (i) => {
      if (i !== 300) return;
      const { rows } = await sql.query<{ ok: boolean }>(
        `select pg_terminate_backend(pid) as ok from pg_stat_activity
          where application_name = 'lazarus-listener' and datname = current_database()`,
      );
      terminated = rows.filter((r) => r.ok).length;
    });
    expect(terminated).toBe(1);
    expect(await idsInCursorOrder(sql)).toEqual(ids);

    for (const s of subscribers) {
      await s.until(1000, 30_000);
      expect({ name: s.name, ids: s.ids, errors: s.errors }).toEqual({ name: s.name, ids, errors: [] });
    }
    // Nothing more arrives: a feed read after the burst publishes no second copy.
    await insertRows(sql, 1, 'order.placed').then(async ([last]) => {
      for (const s of subscribers) {
        await s.until(1001);
        expect(s.ids.slice(1000)).toEqual([last]);
      }
    });
    expect(logged(service.output(), 'LISTEN connection re-established')).toHaveLength(1);
    expect(service.child.exitCode).toBeNull();
  });
});
