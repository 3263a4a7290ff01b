// deadLetterStatsChanged reads its counts from the hourly rollups when the filter allows (and scans
// otherwise); whichever path serves it, its counts equal a count(*) of the table, before and after a change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from './helpers/db.ts';
import { startLiveServer, type LiveServer } from './helpers/live.ts';
import { subscribeSse } from './helpers/sse.ts';

const t = useTestDatabase();
let live: LiveServer;
beforeAll(async () => {
  live = await startLiveServer({ databaseUrl: t.url, db: t.db });
});
afterAll(async () => live?.close());

const STATS = 'subscription ($filter: DeadLetterFilter) { deadLetterStatsChanged(filter: $filter) { total byStatus { status count } } }';
type Counts = { total: number; byStatus: { status: string; count: number }[] };

/** The same figures by a plain scan, in the stream's order (the status enum's). */
async function scanned(where: string, values: unknown[]): Promise<Counts> {
  const { rows } = await t.handle.pool.query(
    `select d.status::text as status, count(*)::int as count from dead_letters_current d where ${where} group by d.status order by d.status`,
    values,
  );
  return { total: rows.reduce((n, r) => n + r.count, 0), byStatus: rows };
}

const now = Date.now();
const from = new Date(now - 5.5 * 3_600_000).toISOString(); // mid-hour: partial hours at both ends
const to = new Date(now - 1.25 * 3_600_000).toISOString();
const CASES: [string, Record<string, unknown>, string, unknown[]][] = [
  ['no filter (rollups)', {}, 'true', []],
  ['statuses and types (rollups)', { statuses: ['PENDING', 'EXHAUSTED'], eventTypes: ['a'] }, `status in ('PENDING', 'EXHAUSTED') and event_type = 'a'`, []],
  ['a mid-hour created range (rollups plus partial hours)', { createdAt: { from, to } }, 'created_at >= $1 and created_at < $2', [from, to]],
  ['error text (a scan)', { errorText: 'boom 3' }, `error_message ilike '%boom 3%'`, []],
];

describe('deadLetterStatsChanged counts', () => {
  it.each(CASES)('equal a scan for %s, before and after a bulk status change', async (_name, filter, where, values) => {
    await t.handle.pool.query(`
      insert into dead_letters (event_type, error_message, status, created_at)
      select (array['a', 'b'])[1 + g % 2], 'boom ' || (g % 7),
             (array['PENDING', 'SUCCEEDED', 'EXHAUSTED']::"DeadLetterStatus"[])[1 + g % 3],
             now() - g * interval '1 minute'
        from generate_series(1, 600) g`);
    const sub = await subscribeSse<{ deadLetterStatsChanged: Counts }>(live.url, STATS, { filter });
    try {
      const [first] = await sub.take(1);
      expect(first!.data!.deadLetterStatsChanged).toEqual(await scanned(where, values));
      expect(first!.data!.deadLetterStatsChanged.total).toBeGreaterThan(0);

      await t.handle.pool.query(`update dead_letters_current set status = 'RESOLVED' where status = 'EXHAUSTED' and id % 2 = 0`);
      const [second] = await sub.take(1);
      expect(second!.data!.deadLetterStatsChanged).toEqual(await scanned(where, values));
      expect(second!.data!.deadLetterStatsChanged).not.toEqual(first!.data!.deadLetterStatsChanged);
    } finally {
      sub.close();
    }
  });
});
