// Retention as a job of its own (workers/jobs.ts): beside the retry loop, never in its way, and in
// short batches.
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Periodic } from '../src/runtime/periodic.ts';
import { oldestPurgeable, purgeFinishedDeadLetters, RETENTION_LOCK_KEY } from '../src/db/sql/purgeFinishedDeadLetters.ts';
import { RETENTION_BATCH, RETENTION_RESTART_EVERY, resumingRetentionPasses, startRetention } from '../src/workers/retention.ts';
import { startRetryLoop, type RetryLoop } from '../src/workers/retry/startRetryLoop.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { silentLogger, statusOf } from './helpers/retry.ts';

const t = useTestDatabase();
const running: (RetryLoop | Periodic)[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

const ok = { ok: true as const, statusCode: null, responseBody: null };
function retention(olderThanMs: number): Periodic {
  const job = startRetention({ db: t.db, logger: silentLogger, olderThanMs, everyMs: 60_000 });
  running.push(job);
  return job;
}

describe('retention beside the retry loop', () => {
  it('purges beside the passes: a purge stuck on a lock does not hold up the next claim', async () => {
    const old = await insertDeadLetter(t.db, { status: 'RESOLVED', resolvedAt: new Date(Date.now() - 10 * 86_400_000) });
    // Another transaction holds the tombstones in SHARE mode (as a CREATE INDEX would): the purge's
    // DELETE, whose trigger writes tombstones, waits for it. (A held row is skipped, not waited for.)
    const holder = await t.handle.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table dead_letter_tombstones in share mode');
      const loop = startRetryLoop({
        db: t.db, deliver: async () => ok, logger: silentLogger, inProcessEventTypes: ['order.placed'], random: () => 0,
        config: { workerId: 'worker-a', batchSize: 10, concurrency: 4, leaseSeconds: 30, pollIntervalMs: 60_000, shutdownTimeoutMs: 5_000 },
      });
      running.push(loop);
      // The job's first run is the one purge of this test (the next is a minute away).
      const job = retention(7 * 86_400_000);
      const purged = once(job.events, 'purged');
      const waitingPurges = async () => (await t.handle.pool.query(`select 1 from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query ilike '%delete from dead_letters%'`)).rowCount;
      await vi.waitFor(async () => expect(await waitingPurges()).toBe(1), { timeout: 10_000, interval: 20 });

      // While the purge waits, new events are claimed and delivered.
      const event = await insertDeadLetter(t.db);
      while ((await statusOf(t.db, event.id)).status !== 'SUCCEEDED') {
        loop.poke();
        await once(loop.events, 'passCompleted');
      }
      expect(await waitingPurges()).toBe(1);

      await holder.query('commit');
      expect(await purged).toEqual([1]);
      expect(await t.db.deadLetter.findUnique({ where: { id: old.id } })).toBeNull();
    } finally {
      await holder.query('rollback').catch(() => {});
      holder.release();
    }
  });

  it('purges a large backlog in batches of at most RETENTION_BATCH, one after another, in one run', async () => {
    expect(450).toBeGreaterThan(3 * RETENTION_BATCH);
    await t.handle.pool.query(`
      insert into dead_letters (event_type, status, resolved_at, next_attempt_at)
      select 'old', 'SUCCEEDED', now() - interval '40 days', null from generate_series(1, 450)`);
    const purged: number[] = [];
    const job = retention(30 * 86_400_000);
    job.events.on('purged', (n: number) => purged.push(n));

    const [total] = await once(job.events, 'runCompleted');

    expect(total).toBe(450);
    expect(purged.length).toBeGreaterThanOrEqual(Math.ceil(450 / RETENTION_BATCH));
    expect(Math.max(...purged)).toBe(RETENTION_BATCH);
    expect(await t.db.deadLetter.count()).toBe(0);
  });
});

describe('retention passes that go on from where they ended', () => {
  const DAY_MS = 86_400_000;
  const finished = (daysAgo: number) => insertDeadLetter(t.db, { status: 'SUCCEEDED', resolvedAt: new Date(Date.now() - daysAgo * DAY_MS) });
  const remaining = async () => (await t.db.deadLetter.findMany({ select: { id: true }, orderBy: { id: 'asc' } })).map((r) => r.id);

  it('starts a batch at the cursor the last one returned: an event older than the cursor is left for a pass from the oldest', async () => {
    await finished(50);
    await finished(45);
    await finished(40);
    const first = await purgeFinishedDeadLetters(t.db, 30 * DAY_MS, 1);
    expect(first?.purged).toBe(1);
    const late = await finished(55);

    const next = await purgeFinishedDeadLetters(t.db, 30 * DAY_MS, 10, first!.cursor);

    expect(next?.purged).toBe(2);
    expect(await remaining()).toEqual([late.id]);
    expect(next!.cursor.resolvedAt!.getTime()).toBeGreaterThan(first!.cursor.resolvedAt!.getTime());
    expect((await purgeFinishedDeadLetters(t.db, 30 * DAY_MS, 10))?.purged).toBe(1);
    expect(await remaining()).toEqual([]);
  });

  it('deletes nothing and answers null while another process holds the retention lock', async () => {
    const old = await finished(40);
    const holder = await t.handle.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select pg_advisory_xact_lock($1::bigint)', [RETENTION_LOCK_KEY]);
      expect(await purgeFinishedDeadLetters(t.db, 30 * DAY_MS, 10)).toBeNull();
      expect(await remaining()).toEqual([old.id]);
    } finally {
      await holder.query('rollback');
      holder.release();
    }
    expect((await purgeFinishedDeadLetters(t.db, 30 * DAY_MS, 10))?.purged).toBe(1);
  });

  it('finds where a pass from the oldest begins with a read: the oldest purgeable event, else the cutoff; null while another process holds the lock', async () => {
    const before = Date.now();
    const none = await oldestPurgeable(t.db, 30 * DAY_MS);
    expect(none!.resolvedAt!.getTime()).toBeGreaterThanOrEqual(before - 30 * DAY_MS - 5_000);
    expect(none!.resolvedAt!.getTime()).toBeLessThanOrEqual(Date.now() - 30 * DAY_MS + 5_000);

    await insertDeadLetter(t.db, { status: 'EXHAUSTED', resolvedAt: new Date(Date.now() - 90 * DAY_MS) });
    await finished(10);
    await finished(45);
    const oldest = await finished(50);
    const from = await oldestPurgeable(t.db, 30 * DAY_MS);
    expect(from!.resolvedAt).toEqual((await t.db.deadLetterState.findUniqueOrThrow({ where: { id: oldest.id } })).resolvedAt);

    const holder = await t.handle.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select pg_advisory_xact_lock($1::bigint)', [RETENTION_LOCK_KEY]);
      expect(await oldestPurgeable(t.db, 30 * DAY_MS)).toBeNull();
    } finally {
      await holder.query('rollback');
      holder.release();
    }
  });

  it('resumes each pass where the last ended, and every RETENTION_RESTART_EVERY-th pass starts from the oldest again', async () => {
    await Promise.all([finished(40), finished(41), finished(42)]);
    const pass = resumingRetentionPasses(t.db, { olderThanMs: 30 * DAY_MS, batch: 2 });
    expect(await pass()).toBe(3);
    const late = await finished(60);

    const resumed: number[] = [];
    for (let i = 1; i < RETENTION_RESTART_EVERY; i++) resumed.push(await pass());

    expect(resumed).toEqual(Array(RETENTION_RESTART_EVERY - 1).fill(0));
    expect(await remaining()).toEqual([late.id]);
    expect(await pass()).toBe(1);
    expect(await remaining()).toEqual([]);
  });
});
