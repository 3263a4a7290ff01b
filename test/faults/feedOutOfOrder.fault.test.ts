// Fault 6: a long transaction takes its change ids first but commits after a later one. The feed
// reads only below the visibility horizon, so both rows reach every subscriber, once each.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPool, useTestDatabase } from '../helpers/db.ts';
import { insertRows, subscribeAll, type Subscriber } from '../helpers/feedSubscribers.ts';
import { startService, type ServiceProcess } from '../helpers/serviceProcess.ts';

const t = useTestDatabase();
let sql: pg.Pool;
let service: ServiceProcess | undefined;
let subscribers: Subscriber[] = [];

beforeAll(() => {
  sql = testPool(t.url, { max: 4 });
});
afterAll(async () => {
  for (const s of subscribers) s.close();
  await service?.stop('SIGKILL');
  await sql.end();
});

describe('transactions commit out of change order', () => {
  it('delivers the late committer and the early committer to every subscriber, each once, in cursor order', async () => {
    service = await startService({ DATABASE_URL: t.url, RETRY_ENABLED: 'false' });
    subscribers = await subscribeAll(service.url, sql);
    const long = await sql.connect();
    try {
      await long.query('begin');
      const [stampedFirst] = await insertRows(long, 1);
      const [committedFirst] = await insertRows(sql, 1);
      // The next row commits after the open transaction's row was stamped, too.
      const [afterIt] = await insertRows(sql, 1);
      const { rows } = await sql.query<{ ids: string[] }>(`select array_agg(id::text order by change_id) as ids from dead_letters_current where event_type = 'order.placed'`);
      // Only the committed rows are visible yet; change ids put the open transaction's row first.
      expect(rows[0]!.ids).toEqual([committedFirst, afterIt]);
      await long.query('commit');

      const last = (await insertRows(sql, 1))[0]!;
      for (const s of subscribers) {
        await s.until(4);
        // Cursor order is (xid, change id): the long transaction's xid is the oldest, and the feed
        // held the later rows back (above the horizon) until it ended.
        expect({ name: s.name, ids: s.ids, errors: s.errors }).toEqual({ name: s.name, ids: [stampedFirst, committedFirst, afterIt, last], errors: [] });
      }
    } finally {
      long.release();
    }
  });
});
