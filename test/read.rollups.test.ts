import { pino } from 'pino';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { purgeFinishedDeadLetters } from '../src/db/sql/purgeFinishedDeadLetters.ts';
import { close, remove, requeue } from '../src/domain/operatorActions.ts';
import { rollupPlan } from '../src/db/sql/rollupPlan.ts';
import { COMPACTION_RESTART_EVERY, compactRollups, resumingCompactions } from '../src/domain/statsRollups.ts';
import { startPeriodic } from '../src/runtime/periodic.ts';
import type { GraphQLServer } from '../src/api/server.ts';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { useTestDatabase } from './helpers/db.ts';
import { testServer } from './helpers/graphql.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { passDeps } from './helpers/retry.ts';
import { ledgersAndScans } from './helpers/rollups.ts';

const t = useTestDatabase();
let server: GraphQLServer;
beforeAll(() => {
  server = testServer(t.db);
});

const H = 3_600_000;
const BASE = Date.UTC(2026, 10, 1, 0, 0, 0);
const at = (hour: number, minute = 0) => new Date(BASE + hour * H + minute * 60_000);

/** Both ledgers equal a scan of the table; returns the scan of the status ledger's groups. */
async function expectRollupsEqualScan() {
  const { rollups, scan, signatures, signatureScan } = await ledgersAndScans(t.handle.pool);
  expect(rollups).toEqual(scan);
  expect(signatures).toEqual(signatureScan);
  return scan;
}

/** A mixed set of rows over three hours, three event types, two queues and two error kinds. */
async function seed(n = 24) {
  await t.handle.pool.query(
    `insert into dead_letters (event_type, queue, source, payload, headers, error_kind, error_message, status, attempts, created_at, next_attempt_at)
     select (array['a','b','c'])[1 + g % 3], (array['q1','q2'])[1 + g % 2], 's', '{}', '{}',
            (array['TIMEOUT','CRASH']::"ErrorKind"[])[1 + g % 2 * 0 + (g / 2) % 2], (array['boom ', 'timeout after ', 'HTTP 5'])[1 + (g / 5) % 3] || g,
            (array['PENDING','EXHAUSTED','SUCCEEDED']::"DeadLetterStatus"[])[1 + g % 3 * 0 + (g / 3) % 3], g % 5,
            $1::timestamptz + (g % 3) * interval '1 hour' + (g % 59) * interval '1 minute', now() - interval '1 minute'
       from generate_series(1, $2::int) g`,
    [at(0), n],
  );
}

describe('stats rollups', () => {
  it('equal a GROUP BY over the table after inserts of single rows and of batches', async () => {
    await seed();
    await insertDeadLetter(t.db, { eventType: 'solo', queue: 'q9', createdAt: at(5, 30) });
    const scan = await expectRollupsEqualScan();
    expect(scan.reduce((s, r) => s + r.n, 0)).toBe(25);
  });

  it('follow status changes by operators, edits that change no rolled-up column, and deletes', async () => {
    await seed();
    await requeue(t.db, 'ops', { selection: { filter: { statuses: ['EXHAUSTED'] } }, dryRun: false, at: null, resetAttempts: true, force: false, reason: null });
    await expectRollupsEqualScan();
    await close(t.db, 'ops', 'RESOLVED', { selection: { filter: { eventTypes: ['a'] } }, dryRun: false, reason: 'fixed upstream' });
    await expectRollupsEqualScan();
    const rollupRows = async () => (await t.handle.pool.query('select count(*)::int as n from dead_letter_rollups')).rows[0].n;
    const before = await rollupRows();
    await t.handle.pool.query(`update dead_letters_current set error_message = error_message || '!'`);
    expect(await rollupRows()).toBe(before);
    await expectRollupsEqualScan();
    await t.handle.pool.query(`update dead_letters_current set attempts = attempts + 1`);
    expect(await rollupRows()).toBeGreaterThan(before);
    await expectRollupsEqualScan();
    await t.handle.pool.query(`update dead_letters_current set event_type = 'renamed', created_at = created_at + interval '2 hours' where queue = 'q1'`);
    await expectRollupsEqualScan();
    await remove(t.db, 'ops', { selection: { filter: { queues: ['q2'] } }, dryRun: false, reason: null });
    await expectRollupsEqualScan();
  });

  it('follow the retry engine moving events to SUCCEEDED and the retention purge deleting them', async () => {
    await seed(12);
    await t.handle.pool.query(`update dead_letters_current set status = 'PENDING', next_attempt_at = now() - interval '1 minute'`);
    const summary = await runRetryPass(passDeps(t.db, { inProcessEventTypes: ['a', 'b', 'c'], deliver: async () => ({ ok: true, statusCode: null, responseBody: null }), config: { workerId: 'w', batchSize: 100, concurrency: 4, leaseSeconds: 30 } }));
    expect(summary).toMatchObject({ claimed: 12, succeeded: 12 });
    const scan = await expectRollupsEqualScan();
    expect(scan.every((r) => r.status === 'SUCCEEDED')).toBe(true);
    await t.handle.pool.query(`update dead_letters_current set resolved_at = now() - interval '2 days'`);
    expect((await purgeFinishedDeadLetters(t.db, 86_400_000, 1000))?.purged).toBe(12);
    expect(await expectRollupsEqualScan()).toEqual([]);
  });

  it('stay equal under concurrent writers and concurrent compactions, and compaction keeps the sums', async () => {
    await seed(30);
    await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => insertDeadLetter(t.db, { eventType: 'a', queue: 'q1', createdAt: at(1, i) })),
      ...Array.from({ length: 4 }, (_, i) => t.handle.pool.query(`update dead_letters_current set status = 'RESOLVED', resolved_by = 'x' where id % 4 = $1 and status <> 'PROCESSING'`, [i])),
      t.handle.pool.query(`delete from dead_letters where id % 7 = 0`),
      compactRollups(t.db),
      compactRollups(t.db),
    ]);
    const scan = await expectRollupsEqualScan();
    await Promise.all([compactRollups(t.db), compactRollups(t.db), seed(6)]);
    await compactRollups(t.db);
    const groups = await expectRollupsEqualScan();
    const { rows } = await t.handle.pool.query(`select count(*)::int as n from dead_letter_rollups`);
    expect(rows[0].n).toBe(groups.length);
    expect(scan.length).toBeGreaterThan(0);
  });
});

describe('the per-row helpers of the rollup and group triggers', () => {
  it('are inlined by the planner (no SQL-function call per row) and give the hour and the unresolved flag', async () => {
    const c = await t.handle.pool.connect();
    try {
      const plan = await c.query(`explain verbose select lazarus_rollup_bucket(created_at), lazarus_is_unresolved(status) from dead_letters_current`);
      const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).not.toMatch(/lazarus_rollup_bucket|lazarus_is_unresolved/);
      // The hour of every instant, whatever the session's zone: across DST changes here and on the
      // other side of the world, at a half-hour offset, at the ends of the range, and NULL.
      for (const zone of ['UTC', 'America/St_Johns', 'Europe/Berlin', 'Australia/Lord_Howe']) {
        await c.query(`set timezone = '${zone}'`);
        const { rows } = await c.query(`
          select count(*) filter (where lazarus_rollup_bucket(t) is distinct from date_trunc('hour', t, 'UTC'))::int as wrong,
                 count(*)::int as n
            from (select timestamptz '2026-03-28 22:00:00+00' + g * interval '7 minutes 13.000001 seconds' as t
                    from generate_series(0, 3000) g
                  union all values (timestamptz '-infinity'), ('infinity'), (null), ('2026-10-25 00:59:59.999999+00')) v`);
        expect(rows[0]).toEqual({ wrong: 0, n: 3005 });
      }
      const flags = await c.query(`select s::text, lazarus_is_unresolved(s) as u from unnest(enum_range(null::"DeadLetterStatus") || null::"DeadLetterStatus") s order by 1`);
      expect(Object.fromEntries(flags.rows.map((r) => [r.s, r.u]))).toEqual({
        PENDING: 1, PROCESSING: 1, EXHAUSTED: 1, SUCCEEDED: 0, RESOLVED: 0, DISCARDED: 0, null: null,
      });
    } finally {
      await c.query('reset timezone');
      c.release();
    }
  });
});

describe('rollup compaction as the service runs it', () => {
  it('folds the ledger on its interval until stopped', async () => {
    await seed(12);
    await t.handle.pool.query(`update dead_letters_current set status = 'RESOLVED', resolved_by = 'x'`);
    const rows = async () => (await t.handle.pool.query('select count(*)::int as n from dead_letter_rollups')).rows[0].n as number;
    const groups = (await expectRollupsEqualScan()).length;
    expect(await rows()).toBeGreaterThan(groups);
    const compaction = startPeriodic({ name: 'rollup compaction', everyMs: 20, runOnce: () => compactRollups(t.db), logger: pino({ level: 'silent' }) });
    await vi.waitFor(async () => expect(await rows()).toBe(groups), { timeout: 10_000, interval: 20 });
    await compaction.stop();
    await expectRollupsEqualScan();
  });
});

describe('rollupPlan', () => {
  it('takes only rolled-up dimensions, reading just the partial hours at the ends of a createdAt range', () => {
    expect(rollupPlan({})?.edges).toEqual([]);
    expect(rollupPlan({ statuses: ['PENDING'], eventTypes: ['a'], queues: ['q'], errorKinds: ['CRASH'], createdAt: { from: at(1), to: at(5) } })?.edges).toEqual([]);
    expect(rollupPlan({ createdAt: { from: at(1, 30) } })?.edges).toHaveLength(1);
    expect(rollupPlan({ createdAt: { from: at(1, 30), to: at(3, 10) } })?.edges).toHaveLength(2);
    expect(rollupPlan({ createdAt: { from: at(1, 30), to: at(2, 10) } })?.edges).toHaveLength(2);
    expect(rollupPlan({ createdAt: { from: at(1, 10), to: at(1, 50) } })).toBeNull();
    // A partial hour is read from the shorter side: its rows in the range, or the hour less the rest.
    expect(rollupPlan({ createdAt: { from: at(1, 10), to: at(3, 40) } })?.edges.map((e) => e.isRestSmaller)).toEqual([true, true]);
    expect(rollupPlan({ createdAt: { from: at(1, 50), to: at(3, 20) } })?.edges.map((e) => e.isRestSmaller)).toEqual([false, false]);
    expect(rollupPlan({ sources: ['s'] })).toBeNull();
    expect(rollupPlan({ errorText: 'boom' })).toBeNull();
    expect(rollupPlan({ updatedAt: { from: at(0) } })).toBeNull();
  });
});

const COUNTS = `query ($filter: DeadLetterFilter, $from: DateTime!, $to: DateTime!) {
  deadLetterStats(filter: $filter) {
    total byStatus { key count } byEventType { key count } byQueue { key count } byErrorKind { key count }
    hours: timeSeries(bucket: HOUR, from: $from, to: $to) { start count }
    days: timeSeries(bucket: DAY, from: $from, to: $to) { start count }
    oldestPendingCreatedAt retrySuccessRate meanAttemptsToSuccess
    topErrors(limit: 3) { signature count firstSeen lastSeen sampleId }
  }
  deadLetters(filter: $filter, first: 1) { totalCount }
}`;

async function stats(filter: Record<string, unknown>, to = at(30)) {
  const res = await server.fetch('http://lazarus/graphql', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: COUNTS, variables: { filter, from: at(-2).toISOString(), to: to.toISOString() } }),
  });
  const body = (await res.json()) as { data: Record<string, unknown>; errors?: unknown };
  expect(body.errors).toBeUndefined();
  return body.data;
}

describe('deadLetterStats from rollups', () => {
  it.each([
    ['no filter', {}],
    ['statuses and event types', { statuses: ['PENDING', 'SUCCEEDED'], eventTypes: ['a', 'b'] }],
    ['queues, error kinds and an hour-aligned createdAt range', { queues: ['q1'], errorKinds: ['TIMEOUT'], createdAt: { from: at(1).toISOString(), to: at(2).toISOString() } }],
    ['a createdAt range ending inside hours', { createdAt: { from: at(0, 17).toISOString(), to: at(2, 31).toISOString() } }],
    ['a createdAt range across one hour boundary', { statuses: ['PENDING'], createdAt: { from: at(1, 40).toISOString(), to: at(2, 20).toISOString() } }],
    ['statuses, types and a range whose partial hours are read as their hours less the rest', { statuses: ['PENDING', 'EXHAUSTED'], eventTypes: ['a', 'b'], createdAt: { from: at(0, 10).toISOString(), to: at(2, 50).toISOString() } }],
    ['an open-ended createdAt range from inside an hour', { createdAt: { from: at(1, 5).toISOString() } }],
    ['a createdAt range inside one hour', { createdAt: { from: at(1, 5).toISOString(), to: at(1, 45).toISOString() } }],
    ['a filter matching nothing', { queues: ['nope'] }],
  ])('equal the same stats computed by scanning (%s)', async (_name, filter) => {
    await seed(40);
    await close(t.db, 'ops', 'DISCARDED', { selection: { filter: { eventTypes: ['c'] } }, dryRun: false, reason: 'noise' });
    const fromRollups = await stats(filter);
    // The same filter plus a no-op source condition is not rollup-eligible, so it scans.
    const scanned = await stats({ ...filter, sources: ['s'] });
    expect(fromRollups).toEqual(scanned);
    // A series ending inside an hour takes its last partial hour from the table.
    expect(await stats(filter, at(2, 30))).toEqual(await stats({ ...filter, sources: ['s'] }, at(2, 30)));
  });
});

describe('compaction in batches', () => {
  it('folds the ledger in many short statements, each over at most its batch of rows, to the same sums', async () => {
    await seed(30);
    await t.handle.pool.query(`update dead_letters_current set status = 'RESOLVED', resolved_by = 'x'`);
    const { rows } = await t.handle.pool.query<{ n: number }>('select count(*)::int as n from dead_letter_rollups');
    const batches: { ledger: string; scanned: number }[] = [];

    await compactRollups(t.db, { batchRows: 10, onBatch: (ledger, b) => batches.push({ ledger, scanned: b.scanned }) });

    // A batch folds every row of the groups its 10 rows belong to, so it can take more than 10.
    expect(rows[0]!.n).toBeGreaterThan(30);
    expect(batches.filter((b) => b.ledger === 'rollups').length).toBeGreaterThan(1);
    expect(Math.max(...batches.map((b) => b.scanned))).toBeLessThanOrEqual(10);
    const groups = await expectRollupsEqualScan();
    const after = await t.handle.pool.query<{ n: number }>('select count(*)::int as n from dead_letter_rollups');
    expect(after.rows[0]!.n).toBe(groups.length);
  });

  it('resumes each run from the last one\'s watermark, and every COMPACTION_RESTART_EVERY-th run walks the whole ledger again', async () => {
    await seed(30);
    const run = resumingCompactions(t.db);
    await run();
    await expectRollupsEqualScan();
    const count = async (eventType: string) =>
      (await t.handle.pool.query<{ n: number }>('select count(*)::int as n from dead_letter_rollups where event_type = $1', [eventType])).rows[0]!.n;
    // A zero-sum pair whose ids were taken before the run passed them but committed after it (ids
    // 1 and 2 are long gone: compaction replaced them), and a pair appended since.
    await t.handle.pool.query(`insert into dead_letter_rollups (id, bucket, event_type, queue, error_kind, status, count, attempts) overriding system value
                               values (1, $1, 'late', 'q1', 'TIMEOUT', 'PENDING', 1, 0), (2, $1, 'late', 'q1', 'TIMEOUT', 'PENDING', -1, 0)`, [at(0)]);
    await t.handle.pool.query(`insert into dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
                               values ($1, 'appended', 'q1', 'TIMEOUT', 'PENDING', 1, 0), ($1, 'appended', 'q1', 'TIMEOUT', 'PENDING', -1, 0)`, [at(0)]);

    await run();
    expect(await count('appended')).toBe(0);
    for (let i = 2; i < COMPACTION_RESTART_EVERY; i++) await run();
    expect(await count('late')).toBe(2);

    await run();
    expect(await count('late')).toBe(0);
    await expectRollupsEqualScan();
  });
});
