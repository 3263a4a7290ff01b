import { beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { compactDeliveryRollups, LATENCY_BOUNDS_MS, LATENCY_ERROR_BOUND, latencyBucketValueMs, percentileOfBuckets } from '../src/domain/deliveryRollups.ts';
import { readDeliveryStats, windowSteps } from '../src/reads/deliveryStats.ts';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { passDeps } from './helpers/retry.ts';

const t = useTestDatabase();
let server: GraphQLServer;
beforeAll(() => {
  server = testServer(t.db);
});

const GROUP = `bucket, event_type, target, outcome::text, latency_bucket`;

/** The ledger summed per group, next to the same groups counted over delivery_attempts. */
async function ledgerAndScan() {
  const q = async (sql: string) => (await t.handle.pool.query(sql)).rows.map((r) => ({ ...r, bucket: (r.bucket as Date).toISOString() }));
  return {
    ledger: await q(`select ${GROUP}, sum(count)::int as n from delivery_attempt_rollups group by ${GROUP} having sum(count) <> 0 order by ${GROUP}`),
    scan: await q(`select date_trunc('minute', a.started_at, 'UTC') as bucket, d.event_type, coalesce(a.target, '') as target, a.outcome::text,
                          lazarus_latency_bucket(a.duration_ms) as latency_bucket, count(*)::int as n
                     from delivery_attempts a join dead_letters d on d.id = a.dead_letter_id group by ${GROUP} order by ${GROUP}`),
  };
}

async function expectLedgerEqualsScan() {
  const { ledger, scan } = await ledgerAndScan();
  expect(ledger).toEqual(scan);
  return scan;
}

/**
 * `n` attempts in one statement over events of types a and b, to targets x and y, over the last
 * 50 minutes, with durations from 0 ms to ~40 s spread over many latency buckets.
 */
async function insertAttempts(ids: bigint[], n: number, seed = 1) {
  await t.handle.pool.query(
    `insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome, target)
     select ($1::bigint[])[1 + (g * 7 + $3) % array_length($1::bigint[], 1)], 1, 'w', now() - ((g * 13 + $3) % 50) * interval '1 minute',
            ((g * 7919 + $3 * 104729) % 40000) / (1 + (g % 5) * 40),
            (array['SUCCEEDED','FAILED','SUCCEEDED','TIMED_OUT','SUCCEEDED','PERMANENT_FAILURE','LEASE_LOST']::"AttemptOutcome"[])[1 + g % 7],
            case when g % 7 = 6 then null else (array['x.example','y.example'])[1 + g % 2] end
       from generate_series(1, $2::int) g`,
    [ids.map(String), n, seed],
  );
}

async function events() {
  const ids: bigint[] = [];
  for (const eventType of ['a', 'b', 'a', 'b', 'c']) ids.push((await insertDeadLetter(t.db, { eventType })).id);
  return ids;
}

/** Per key over the last hour, straight from delivery_attempts: counts and nearest-rank percentiles. */
async function scanOfLastHour(key: 'event_type' | 'target') {
  const { from, to } = windowSteps('HOUR', new Date());
  const { rows } = await t.handle.pool.query(
    `select ${key === 'target' ? `coalesce(a.target, '')` : 'd.event_type'} as key, count(*)::int as deliveries,
            (count(*) filter (where outcome = 'SUCCEEDED'))::int as succeeded,
            percentile_disc(0.5) within group (order by duration_ms) as p50, percentile_disc(0.95) within group (order by duration_ms) as p95
       from delivery_attempts a join dead_letters d on d.id = a.dead_letter_id
      where a.started_at >= $1 and a.started_at < $2 and a.outcome <> 'LEASE_LOST'
      group by 1 order by 1`,
    [from, to],
  );
  return rows as { key: string; deliveries: number; succeeded: number; p50: number; p95: number }[];
}

async function expectStatsAgreeWithScan(groupBy: 'EVENT_TYPE' | 'TARGET') {
  const stats = await readDeliveryStats(t.db, 'HOUR', groupBy, new Date());
  const scan = await scanOfLastHour(groupBy === 'TARGET' ? 'target' : 'event_type');
  expect(stats.series.map((s) => ({ key: s.key, deliveries: s.deliveries, succeeded: s.succeeded })).sort((x, y) => (x.key < y.key ? -1 : 1)))
    .toEqual(scan.map((r) => ({ key: r.key, deliveries: r.deliveries, succeeded: r.succeeded })));
  for (const r of scan) {
    const s = stats.series.find((x) => x.key === r.key)!;
    expect(Math.abs(s.p50Ms! - r.p50)).toBeLessThanOrEqual(LATENCY_ERROR_BOUND * r.p50);
    expect(Math.abs(s.p95Ms! - r.p95)).toBeLessThanOrEqual(LATENCY_ERROR_BOUND * r.p95);
    expect(s.perMinute.reduce((a, b) => a + b, 0)).toBe(r.deliveries);
  }
  return stats;
}

describe('the delivery rollup ledger', () => {
  it('buckets durations exactly as LATENCY_BOUNDS_MS says, within the stated error bound', async () => {
    expect(LATENCY_BOUNDS_MS).toHaveLength(76);
    const probes = [0, -5, ...LATENCY_BOUNDS_MS.flatMap((b) => [b - 1, b, b + 1]), 2 ** 31 - 1];
    const { rows } = await t.handle.pool.query(`select v, lazarus_latency_bucket(v) as b from unnest($1::int[]) v`, [probes]);
    for (const { v, b } of rows) expect(b, `bucket of ${v} ms`).toBe(LATENCY_BOUNDS_MS.filter((x) => x <= v).length);
    // Every whole millisecond below the last bound is reported within the bound.
    for (let ms = 0; ms < LATENCY_BOUNDS_MS.at(-1)!; ms++) {
      const reported = latencyBucketValueMs(LATENCY_BOUNDS_MS.filter((x) => x <= ms).length);
      if (Math.abs(reported - ms) > LATENCY_ERROR_BOUND * ms) throw new Error(`${ms} ms is reported as ${reported}`);
    }
    expect(percentileOfBuckets(new Map(), 0.5)).toBeNull();
    expect(percentileOfBuckets(new Map([[3, 1], [1, 1]]), 0.5)).toBe(1);
  });

  it('equals a GROUP BY over delivery_attempts after single and batch inserts, and the stats agree with a scan', async () => {
    const ids = await events();
    await insertAttempts(ids, 400);
    await t.handle.pool.query(`insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, duration_ms, outcome, target) values ($1, 2, 'w', 12, 'SUCCEEDED', 'z.example')`, [ids[4]]);
    const scan = await expectLedgerEqualsScan();
    expect(scan.reduce((s, r) => s + r.n, 0)).toBe(401);
    await expectStatsAgreeWithScan('EVENT_TYPE');
    const byTarget = await expectStatsAgreeWithScan('TARGET');
    expect(byTarget.series.map((s) => s.key).sort()).toEqual(['x.example', 'y.example', 'z.example']);
  });

  it('stays equal under concurrent writers and compactions, and compaction folds each group into one row', async () => {
    const ids = await events();
    await insertAttempts(ids, 300, 1);
    await Promise.all([insertAttempts(ids, 200, 2), insertAttempts(ids, 200, 3), compactDeliveryRollups(t.db, new Date()), compactDeliveryRollups(t.db, new Date(), 7)]);
    await expectLedgerEqualsScan();
    await Promise.all([compactDeliveryRollups(t.db, new Date(), 5), insertAttempts(ids, 50, 4)]);
    await compactDeliveryRollups(t.db, new Date());
    const groups = await expectLedgerEqualsScan();
    const { rows } = await t.handle.pool.query(`select count(*)::int as n from delivery_attempt_rollups`);
    expect(rows[0].n).toBe(groups.length);
    await expectStatsAgreeWithScan('EVENT_TYPE');
    await expectStatsAgreeWithScan('TARGET');
  });

  it('folds minutes older than two hours into the day chart’s 15-minute steps: both charts read the same before and after, and a second run changes nothing', async () => {
    const ids = await events();
    // Attempts every 7 minutes over the last 5 hours, spread over types, targets, outcomes and latencies.
    await t.handle.pool.query(
      `insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome, target)
       select ($1::bigint[])[1 + g % 5], 1, 'w', now() - (g * 7 % 300) * interval '1 minute' - (g % 50) * interval '1 second',
              (g * 7919) % 3000, (array['SUCCEEDED','FAILED','TIMED_OUT']::"AttemptOutcome"[])[1 + g % 3], (array['x.example','y.example'])[1 + g % 2]
         from generate_series(1, 900) g`,
      [ids.map(String)],
    );
    // And two of one group in two minutes of one 15-minute step about three hours ago: whatever the
    // clock's minute, the fold has two rows to make one of.
    await t.handle.pool.query(
      `insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome, target)
       select $1::bigint, 2, 'w', date_bin('15 minutes', now() - interval '3 hours', 'epoch') + m * interval '1 minute', 40, 'SUCCEEDED', 'x.example'
         from generate_series(1, 2) m`,
      [String(ids[0])],
    );
    const now = new Date();
    const charts = async () => ({
      day: await readDeliveryStats(t.db, 'DAY', 'EVENT_TYPE', now),
      dayByTarget: await readDeliveryStats(t.db, 'DAY', 'TARGET', now),
      hour: await readDeliveryStats(t.db, 'HOUR', 'TARGET', now),
    });
    // Minutes older than two hours are folded up to the last step boundary before that.
    const rowsOlderThanTwoHours = async () => (await t.handle.pool.query(
      `select count(*)::int as n, count(*) filter (where extract(epoch from bucket)::bigint % 900 <> 0)::int as off_step
         from delivery_attempt_rollups where bucket < $1::timestamptz - interval '2 hours 15 minutes'`, [now])).rows[0] as { n: number; off_step: number };
    const before = await charts();
    const old = await rowsOlderThanTwoHours();
    expect(old.off_step).toBeGreaterThan(0);

    const removed = await compactDeliveryRollups(t.db, now);
    expect(await charts()).toEqual(before);
    const coarse = await rowsOlderThanTwoHours();
    expect(coarse.off_step).toBe(0);
    expect(coarse.n).toBeLessThan(old.n);
    expect(removed).toBeGreaterThanOrEqual(old.n - coarse.n);
    // What the rows count is still every attempt, per 15-minute step and group.
    const { rows: [sums] } = await t.handle.pool.query(`select (select sum(count)::int from delivery_attempt_rollups) as ledger, (select count(*)::int from delivery_attempts) as attempts`);
    expect(sums.ledger).toBe(sums.attempts);

    expect(await compactDeliveryRollups(t.db, now)).toBe(0);
    expect(await charts()).toEqual(before);
  });

  it('counts the retry loop’s attempts, keeps deliveries of deleted events, and trims minutes past two days', async () => {
    const ids = await events();
    await t.handle.pool.query(`update dead_letters_current set next_attempt_at = now() - interval '1 minute'`);
    const summary = await runRetryPass(passDeps(t.db, { inProcessEventTypes: ['a', 'b', 'c'], deliver: async () => ({ ok: true, statusCode: null, responseBody: null }), config: { workerId: 'w', batchSize: 100, concurrency: 4, leaseSeconds: 30 } }));
    expect(summary).toMatchObject({ claimed: 5, succeeded: 5 });
    await expectLedgerEqualsScan();
    const stats = await readDeliveryStats(t.db, 'HOUR', 'EVENT_TYPE', new Date());
    expect(stats.series.map((s) => [s.key, s.deliveries, s.succeeded])).toEqual([['a', 2, 2], ['b', 2, 2], ['c', 1, 1]]);

    await t.handle.pool.query(`delete from dead_letters where event_type = 'a'`);
    const after = await readDeliveryStats(t.db, 'HOUR', 'EVENT_TYPE', new Date());
    expect(after.series.map((s) => [s.key, s.deliveries])).toEqual([['a', 2], ['b', 2], ['c', 1]]);

    await t.handle.pool.query(`insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome) values ($1, 9, 'w', now() - interval '49 hours', 5, 'FAILED')`, [ids[1]]);
    const count = async () => (await t.handle.pool.query(`select count(*)::int as n from delivery_attempt_rollups where bucket < now() - interval '2 days'`)).rows[0].n;
    expect(await count()).toBe(1);
    await compactDeliveryRollups(t.db, new Date());
    expect(await count()).toBe(0);
    await t.handle.pool.query(`truncate delivery_attempts`);
    expect((await t.handle.pool.query(`select count(*)::int as n from delivery_attempt_rollups`)).rows[0].n).toBe(0);
  });
});

describe('deliveryStats over GraphQL', () => {
  it('answers per target over the last hour with 60 steps and per event type over the day with 96', async () => {
    const ids = await events();
    await t.handle.pool.query(
      `insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome, target)
       values ($1, 1, 'w', now(), 100, 'SUCCEEDED', 'x.example'), ($1, 2, 'w', now(), 100, 'SUCCEEDED', 'x.example'),
              ($1, 3, 'w', now(), 2000, 'FAILED', 'x.example'), ($2, 1, 'w', now(), 0, 'LEASE_LOST', null)`,
      [ids[0], ids[1]],
    );
    const query = `query ($window: DeliveryWindow!, $groupBy: DeliveryGrouping!) {
      deliveryStats(window: $window, groupBy: $groupBy) { window groupBy stepMinutes stepStarts series { key deliveries succeeded successRate p50Ms p95Ms perMinute } } }`;
    const hour = await execute<{ deliveryStats: { stepStarts: string[]; series: { perMinute: number[] }[] } }>(server, query, { window: 'HOUR', groupBy: 'TARGET' });
    expect(hour.body.errors).toBeUndefined();
    const h = hour.body.data!.deliveryStats;
    expect(h.stepStarts).toHaveLength(60);
    expect(h.series[0]!.perMinute.at(-1)).toBe(3);
    expect(h).toMatchObject({
      window: 'HOUR', groupBy: 'TARGET', stepMinutes: 1,
      series: [{ key: 'x.example', deliveries: 3, succeeded: 2, successRate: 2 / 3, p50Ms: latencyBucketValueMs(LATENCY_BOUNDS_MS.filter((b) => b <= 100).length), p95Ms: latencyBucketValueMs(LATENCY_BOUNDS_MS.filter((b) => b <= 2000).length) }],
    });
    const day = await execute<{ deliveryStats: { stepStarts: string[]; series: { key: string; perMinute: number[] }[] } }>(server, query, { window: 'DAY', groupBy: 'EVENT_TYPE' });
    expect(day.body.data!.deliveryStats.stepStarts).toHaveLength(96);
    expect(day.body.data!.deliveryStats.series.map((s) => [s.key, s.perMinute.at(-1)])).toEqual([['a', 3 / 15]]);
    const bad = await execute(server, query, { window: 'WEEK', groupBy: 'TARGET' });
    expect(bad.body.errors?.[0]?.message).toMatch(/WEEK/);
  });
});
