import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { T0, hours, seedReadRows } from './helpers/readSeed.ts';
import { blockedKeysSql, type BlockedKeyRow } from '../src/db/sql/blockedKeys.ts';
import { deadLetterWhereSql } from '../src/db/sql/deadLetterWhere.ts';
import { runSql } from '../src/db/runSql.ts';
import { deadLetterTopErrorsSql } from '../src/db/sql/deadLetterTopErrors.ts';
import { Prisma } from '../src/generated/prisma/client.ts';

const t = useTestDatabase();
let server: GraphQLServer;
let ids: Record<string, bigint>;

beforeAll(() => {
  server = testServer(t.db);
});
beforeEach(async () => {
  ids = await seedReadRows(t.db);
  // A key whose EXHAUSTED head holds nothing back is not blocked.
  await t.db.deadLetter.create({ data: { eventType: 'solo', status: 'EXHAUSTED', orderingKey: 'cust-9', orderingSeq: 1n, createdAt: hours(60), nextAttemptAt: null } });
  // Keys hold events back only for ordered types.
  await t.db.retryPolicy.createMany({ data: [{ eventType: 'order.placed', ordered: true }, { eventType: 'solo', ordered: true }] });
});

const STATS = `query ($filter: DeadLetterFilter, $from: DateTime!, $to: DateTime!, $bucket: TimeBucketSize!) {
  deadLetterStats(filter: $filter) {
    total
    byStatus { key count } byEventType { key count } byQueue { key count } byErrorKind { key count }
    topErrors(limit: 100) { signature count firstSeen lastSeen sampleId }
    timeSeries(bucket: $bucket, from: $from, to: $to) { start count }
    oldestPendingCreatedAt oldestPendingAgeSeconds retrySuccessRate meanAttemptsToSuccess
    blockedKeys { orderingKey eventType headId heldBack }
  }
}`;

type KeyCount = { key: string; count: number };
type Stats = {
  total: number; byStatus: KeyCount[]; byEventType: KeyCount[]; byQueue: KeyCount[]; byErrorKind: KeyCount[];
  topErrors: { signature: string; count: number; firstSeen: string; lastSeen: string; sampleId: string }[];
  timeSeries: { start: string; count: number }[];
  oldestPendingCreatedAt: string | null; oldestPendingAgeSeconds: number | null; retrySuccessRate: number | null; meanAttemptsToSuccess: number | null;
  blockedKeys: { orderingKey: string; eventType: string; headId: string; heldBack: number }[];
};

async function stats(filter: Record<string, unknown>, bucket = 'DAY', from = T0, to = hours(72)): Promise<Stats> {
  const { body } = await execute<{ deadLetterStats: Stats }>(server, STATS, { filter, bucket, from: from.toISOString(), to: to.toISOString() });
  expect(body.errors).toBeUndefined();
  return body.data!.deadLetterStats;
}

/** The same figure straight from SQL, for rows matching `where` (plain SQL text over d). */
async function sqlGroup(column: string, where: string): Promise<KeyCount[]> {
  const { rows } = await t.handle.pool.query<KeyCount>(
    `select ${column}::text as key, count(*)::int as count from dead_letters_current d where ${where} group by 1 order by 2 desc, 1`,
  );
  return rows;
}

describe('deadLetterStats', () => {
  it.each([
    ['no filter', {}, 'true'],
    ['a filter', { eventTypes: ['order.placed', 'order.shipped'] }, "d.event_type in ('order.placed', 'order.shipped')"],
    ['a filter matching nothing', { queues: ['nope'] }, 'false'],
  ])('agrees with SQL on every count for %s', async (_name, filter, where) => {
    const s = await stats(filter);
    const { rows } = await t.handle.pool.query(`select count(*)::int as n from dead_letters_current d where ${where}`);
    expect(s.total).toBe(rows[0].n);
    expect(s.byStatus).toEqual(await sqlGroup('d.status', where));
    expect(s.byEventType).toEqual(await sqlGroup('d.event_type', where));
    expect(s.byQueue).toEqual(await sqlGroup('d.queue', where));
    expect(s.byErrorKind).toEqual(await sqlGroup('d.error_kind', where));

    const top = await t.handle.pool.query(
      `select error_signature as signature, count(*)::int as count, min(created_at) as "firstSeen", max(created_at) as "lastSeen", (array_agg(id order by created_at, id))[1]::text as "sampleId"
         from dead_letters_current d where ${where} group by 1 order by 2 desc, 1`,
    );
    expect(s.topErrors).toEqual(top.rows.map((r) => ({ ...r, firstSeen: r.firstSeen.toISOString(), lastSeen: r.lastSeen.toISOString() })));

    const retry = await t.handle.pool.query(
      `select count(*) filter (where status = 'SUCCEEDED')::float8 / nullif(count(*) filter (where status in ('SUCCEEDED', 'EXHAUSTED')), 0) as rate,
              (avg(attempts) filter (where status = 'SUCCEEDED'))::float8 as mean,
              min(created_at) filter (where status = 'PENDING') as oldest
         from dead_letters_current d where ${where}`,
    );
    expect(s.retrySuccessRate).toBe(retry.rows[0].rate);
    expect(s.meanAttemptsToSuccess).toBe(retry.rows[0].mean);
    expect(s.oldestPendingCreatedAt).toBe(retry.rows[0].oldest?.toISOString() ?? null);
  });

  it('gives the exact figures of the seed', async () => {
    const s = await stats({});
    expect(s.total).toBe(8);
    expect(s.topErrors.slice(0, 2)).toEqual([
      { signature: 'HTTP <n> from inventory-service (request <n>)', count: 2, firstSeen: hours(0).toISOString(), lastSeen: hours(0).toISOString(), sampleId: ids.a!.toString() },
      { signature: 'timeout after <n> ms calling <uuid>', count: 2, firstSeen: hours(3).toISOString(), lastSeen: hours(26).toISOString(), sampleId: ids.c!.toString() },
    ]);
    // SUCCEEDED d (2 attempts), f (4); EXHAUSTED b and the solo row.
    expect(s.retrySuccessRate).toBe(0.5);
    expect(s.meanAttemptsToSuccess).toBe(3);
    expect(s.oldestPendingCreatedAt).toBe(hours(0).toISOString());
    expect(s.oldestPendingAgeSeconds).toBeGreaterThan((Date.now() - hours(0).getTime()) / 1000 - 60);
    // cust-2 in order.placed: b (EXHAUSTED) holds g back. Its order.shipped event c is another
    // queue, headed by itself.
    expect(s.blockedKeys).toEqual([{ orderingKey: 'cust-2', eventType: 'order.placed', headId: ids.b!.toString(), heldBack: 1 }]);
  });

  it('fills empty buckets of a daily and an hourly series, from the bucket holding `from`', async () => {
    const daily = await stats({}, 'DAY', hours(1), hours(72));
    expect(daily.timeSeries).toEqual([
      { start: hours(0).toISOString(), count: 3 },
      { start: hours(24).toISOString(), count: 3 },
      { start: hours(48).toISOString(), count: 2 },
    ]);
    const hourly = await stats({ statuses: ['PENDING', 'EXHAUSTED'] }, 'HOUR', hours(0), hours(4));
    expect(hourly.timeSeries).toEqual([
      { start: hours(0).toISOString(), count: 2 },
      { start: hours(1).toISOString(), count: 0 },
      { start: hours(2).toISOString(), count: 0 },
      { start: hours(3).toISOString(), count: 1 },
    ]);
  });

  it('lists a key as the retry loop holds it: ordered types only, head by (ordering_seq, id) with no sequence first', async () => {
    const add = (status: 'PENDING' | 'EXHAUSTED', orderingSeq: bigint | null, at: number) =>
      t.db.deadLetter.create({ data: { eventType: 'invoice.sent', status, orderingKey: 'inv-1', orderingSeq, createdAt: hours(at), nextAttemptAt: status === 'PENDING' ? hours(at) : null } });
    const pending = await add('PENDING', 2n, 10);
    const head = await add('EXHAUSTED', null, 11);
    await add('PENDING', 1n, 12);
    const invoiceKeys = async () => (await stats({ eventTypes: ['invoice.sent'] })).blockedKeys;
    expect(await invoiceKeys()).toEqual([]);
    await t.db.retryPolicy.create({ data: { eventType: 'invoice.sent', ordered: true } });
    expect(await invoiceKeys()).toEqual([{ orderingKey: 'inv-1', eventType: 'invoice.sent', headId: head.id.toString(), heldBack: 2 }]);
    // A finished event no longer counts; the head resolved, the key is free.
    await t.db.deadLetter.update({ where: { id: pending.id }, data: { status: 'SUCCEEDED', nextAttemptAt: null } });
    expect((await invoiceKeys())[0]?.heldBack).toBe(1);
    await t.db.deadLetter.update({ where: { id: head.id }, data: { status: 'RESOLVED' } });
    expect(await invoiceKeys()).toEqual([]);
  });

  it('samples each error signature with its first seen event, not its lowest id', async () => {
    const older = await t.db.deadLetter.create({ data: { eventType: 'order.placed', errorMessage: 'HTTP 503 from inventory-service (request 4)', createdAt: new Date(T0.getTime() - 60_000) } });
    const top = (await stats({})).topErrors.find((e) => e.signature === 'HTTP <n> from inventory-service (request <n>)');
    expect(top).toMatchObject({ count: 3, firstSeen: older.createdAt.toISOString(), sampleId: older.id.toString() });
  });

  it('finds a signature’s first and last event by descents on its index, not by walking the oldest events of other signatures', async () => {
    // 3,000 events of another error, all older than the one of 'rare'.
    await t.db.$executeRaw`insert into dead_letters (event_type, error_message, created_at)
                           select 'order.placed', 'flood ' || g, ${hours(-500)}::timestamptz + g * interval '1 second' from generate_series(1, 3000) g`;
    const rare = await t.db.deadLetter.create({ data: { eventType: 'order.placed', errorMessage: 'rare failure', createdAt: new Date(T0.getTime() - 1_000) } });
    await t.db.$executeRaw`analyze dead_letters`;
    const sql = deadLetterTopErrorsSql(Prisma.sql`true`, 100, null, true);
    const rows = await runSql<{ signature: string; sampleId: bigint }>(t.db, sql);
    expect(rows.find((r) => r.signature === 'rare failure')?.sampleId).toBe(rare.id);
    const [plan] = await runSql<{ 'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(t.db, Prisma.sql`explain (analyze, buffers, format json) ${sql}`);
    const { Plan } = plan!['QUERY PLAN'][0];
    // The count reads every row once (no rollup plan here); the first/last lookups add a few buffers
    // per signature. Walking the created index for 'rare' would add the flood's 3,000 rows again.
    const scan = await runSql<{ 'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(t.db, Prisma.sql`explain (analyze, buffers, format json) select count(*) from dead_letters`);
    const scanBuffers = scan[0]!['QUERY PLAN'][0].Plan['Shared Hit Blocks'] + scan[0]!['QUERY PLAN'][0].Plan['Shared Read Blocks'];
    expect(Plan['Shared Hit Blocks'] + Plan['Shared Read Blocks']).toBeLessThan(scanBuffers + 20 * rows.length);
  });

  it('finds the same blocked keys by a descent per key as by one pass over every key', async () => {
    // Three keys of an ordered type: EXHAUSTED heads holding back 2 and 1 events, and a PENDING head.
    const add = (orderingKey: string, status: 'PENDING' | 'EXHAUSTED', orderingSeq: bigint) =>
      t.db.deadLetter.create({ data: { eventType: 'invoice.sent', status, orderingKey, orderingSeq, createdAt: hours(5), nextAttemptAt: status === 'PENDING' ? hours(5) : null } });
    await t.db.retryPolicy.create({ data: { eventType: 'invoice.sent', ordered: true } });
    const k1 = await add('inv-1', 'EXHAUSTED', 1n);
    await add('inv-1', 'PENDING', 2n);
    await add('inv-1', 'EXHAUSTED', 3n);
    const k2 = await add('inv-2', 'EXHAUSTED', 1n);
    await add('inv-2', 'PENDING', 2n);
    await add('inv-3', 'PENDING', 1n);
    await add('inv-3', 'EXHAUSTED', 2n);
    const keys = (maxWalkedKeys?: number) =>
      runSql<BlockedKeyRow>(t.db, blockedKeysSql(deadLetterWhereSql({ eventTypes: ['invoice.sent'] }), 20, maxWalkedKeys));
    const expected = [
      { orderingKey: 'inv-1', eventType: 'invoice.sent', headId: k1.id, heldBack: 2 },
      { orderingKey: 'inv-2', eventType: 'invoice.sent', headId: k2.id, heldBack: 1 },
    ];
    expect(await keys()).toEqual(expected);
    expect(await keys(0)).toEqual(expected);
  });

  it('applies the filter to the head of a blocked key', async () => {
    expect((await stats({ eventTypes: ['order.placed'] })).blockedKeys).toHaveLength(1);
    expect((await stats({ eventTypes: ['order.shipped'] })).blockedKeys).toEqual([]);
  });

  it.each([
    ['an inverted range', 'DAY', hours(5), hours(1), 'from'],
    ['too many buckets', 'HOUR', hours(0), hours(3000), 'to'],
  ])('answers BAD_USER_INPUT for a time series with %s', async (_name, bucket, from, to, argument) => {
    const { body } = await execute(server, STATS, { filter: {}, bucket, from: (from as Date).toISOString(), to: (to as Date).toISOString() });
    expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument });
  });
});

describe('read-side views', () => {
  it('answer the same as the GraphQL stats', async () => {
    const s = await stats({});
    const depth = await t.handle.pool.query('select status::text as key, events::int as count from lazarus_dlq_depth');
    expect(depth.rows.sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1))).toEqual(s.byStatus);
    // Its oldest event per status (rollups name the hour, the table the instant) equals a scan,
    // also after the oldest of a status has moved on.
    const depthAgreesWithScan = async () => {
      const view = await t.handle.pool.query('select status::text, events::int, oldest_created_at from lazarus_dlq_depth order by 1');
      const scan = await t.handle.pool.query('select status::text, count(*)::int as events, min(created_at) as oldest_created_at from dead_letters_current group by 1 order by 1');
      expect(view.rows).toEqual(scan.rows);
    };
    await depthAgreesWithScan();
    await t.db.deadLetter.update({ where: { id: ids.a! }, data: { status: 'RESOLVED' } });
    await depthAgreesWithScan();
    const blocked = await t.handle.pool.query(
      'select ordering_key as "orderingKey", head_event_type as "eventType", head_id::text as "headId", held_back::int as "heldBack" from lazarus_blocked_keys',
    );
    expect(blocked.rows).toEqual(s.blockedKeys);
    const top = await t.handle.pool.query('select error_signature as signature, failures::int as count, sample_id::text as "sampleId" from lazarus_top_errors');
    expect(top.rows).toEqual(s.topErrors.map(({ signature, count, sampleId }) => ({ signature, count, sampleId })));
  });

  it('list the last 24 hours of failures by type and error', async () => {
    const recent = new Date(Date.now() - 3_600_000);
    await t.db.deadLetter.createMany({
      data: [
        { eventType: 'invoice.sent', errorKind: 'TIMEOUT', errorMessage: 'timeout after 5000 ms', createdAt: recent },
        { eventType: 'invoice.sent', errorKind: 'TIMEOUT', errorMessage: 'timeout after 7000 ms', createdAt: recent },
        { eventType: 'invoice.sent', errorKind: 'CRASH', errorMessage: 'worker 12 crashed', createdAt: recent },
      ],
    });
    const earlier = await t.db.deadLetter.create({
      data: { eventType: 'invoice.sent', errorKind: 'TIMEOUT', errorMessage: 'timeout after 9000 ms', createdAt: new Date(recent.getTime() - 60_000) },
    });
    const { rows } = await t.handle.pool.query('select event_type, error_kind::text, error_signature, failures::int, sample_id::text from lazarus_failures_last_24h');
    expect(rows).toEqual([
      // The sample is the first seen, here the last one inserted.
      { event_type: 'invoice.sent', error_kind: 'TIMEOUT', error_signature: 'timeout after <n> ms', failures: 3, sample_id: earlier.id.toString() },
      { event_type: 'invoice.sent', error_kind: 'CRASH', error_signature: 'worker <n> crashed', failures: 1, sample_id: expect.any(String) },
    ]);
  });
});
