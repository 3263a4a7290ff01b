import { describe, expect, it } from 'vitest';
import { purgeFinishedDeadLetters } from '../src/db/sql/purgeFinishedDeadLetters.ts';
import { runRetentionPass } from '../src/workers/retention.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';

const t = useTestDatabase();
const DAY_MS = 86_400_000;
const old = () => new Date(Date.now() - 40 * DAY_MS);
const seedOld = (n: number) => t.handle.pool.query(`
  insert into dead_letters (event_type, status, resolved_at, next_attempt_at)
  select 'old', 'SUCCEEDED', now() - interval '40 days', null from generate_series(1, $1::int)`, [n]);

/** Resolves when `promise` has settled or `other` has, whichever first; tells which. */
const first = (promise: Promise<unknown>, other: Promise<unknown>) =>
  Promise.race([promise.then(() => 'purge' as const), other.then(() => 'other' as const)]);

describe('purgeFinishedDeadLetters and rows other transactions hold', () => {
  it('never deletes an old finished event that a requeue is turning PENDING meanwhile', async () => {
    const event = await insertDeadLetter(t.db, { status: 'SUCCEEDED', resolvedAt: old() });
    const requeue = await t.handle.pool.connect();
    try {
      await requeue.query('begin');
      await requeue.query(`update dead_letters set status = 'PENDING', next_attempt_at = now() where id = $1`, [event.id.toString()]);
      const purge = purgeFinishedDeadLetters(t.db, 30 * DAY_MS, 100);
      // A purge that waits for the row deletes it once the requeue commits (the DELETE re-checked
      // only the id); one that skips held rows has already answered.
      const waiting = (async () => {
        for (;;) {
          const { rowCount } = await t.handle.pool.query(`select 1 from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock' and query ilike '%delete from dead_letters%'`);
          if (rowCount) return;
          await new Promise((r) => setImmediate(r));
        }
      })();
      await first(purge, waiting);
      await requeue.query('commit');
      await purge;
    } finally {
      await requeue.query('rollback').catch(() => {});
      requeue.release();
    }
    expect(await t.db.deadLetter.findUnique({ where: { id: event.id }, select: { status: true } })).toEqual({ status: 'PENDING' });
  });

  it('skips a finished event another transaction holds without waiting, and purges it on a later pass', async () => {
    const held = await insertDeadLetter(t.db, { status: 'RESOLVED', resolvedAt: old() });
    const free = await insertDeadLetter(t.db, { status: 'DISCARDED', resolvedAt: old() });
    const holder = await t.handle.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from dead_letters where id = $1 for update', [held.id.toString()]);
      expect(await purgeFinishedDeadLetters(t.db, 30 * DAY_MS, 100)).toBe(1);
      expect(await t.db.deadLetter.findUnique({ where: { id: free.id } })).toBeNull();
      await holder.query('commit');
    } finally {
      await holder.query('rollback').catch(() => {});
      holder.release();
    }
    expect(await purgeFinishedDeadLetters(t.db, 30 * DAY_MS, 100)).toBe(1);
    expect(await t.db.deadLetter.count()).toBe(0);
  });
});

describe('runRetentionPass', () => {
  it('deletes batch after batch until one comes back short, and keeps what is unfinished or recent', async () => {
    await seedOld(230);
    const pending = await insertDeadLetter(t.db, { createdAt: old() });
    const exhausted = await insertDeadLetter(t.db, { status: 'EXHAUSTED', createdAt: old(), nextAttemptAt: null });
    const recent = await insertDeadLetter(t.db, { status: 'SUCCEEDED', resolvedAt: new Date() });
    const batches: number[] = [];

    const total = await runRetentionPass(t.db, { olderThanMs: 30 * DAY_MS, batch: 50, onBatch: (n) => batches.push(n) });

    expect(total).toBe(230);
    expect(batches).toEqual([50, 50, 50, 50, 30]);
    const left = await t.db.deadLetter.findMany({ select: { id: true }, orderBy: { id: 'asc' } });
    expect(left.map((r) => r.id)).toEqual([pending.id, exhausted.id, recent.id]);
  });

  it('rests between batches in proportion to their time, and a stop ends the rest at once', async () => {
    await seedOld(200);
    const stop = new AbortController();
    const batches: number[] = [];

    // A rest of 10,000 times a batch's time would outlast the test's timeout: only the stop ends it.
    const pass = runRetentionPass(t.db, { olderThanMs: 30 * DAY_MS, batch: 50, restRatio: 10_000, signal: stop.signal, onBatch: (n) => batches.push(n) });
    while (batches.length === 0) await new Promise((r) => setImmediate(r));
    // An absence has no event to await: 200 ms is 20+ batches' time back to back, and none comes.
    await new Promise((r) => setTimeout(r, 200));
    expect(batches).toEqual([50]);
    stop.abort();

    expect(await pass).toBe(50);
    expect(await t.db.deadLetter.count()).toBe(150);
  });

  it('ends after the batch in flight when its signal aborts', async () => {
    await seedOld(200);
    const stop = new AbortController();
    const batches: number[] = [];

    const total = await runRetentionPass(t.db, { olderThanMs: 30 * DAY_MS, batch: 50, signal: stop.signal, onBatch: (n) => (batches.push(n), stop.abort()) });

    expect(total).toBe(50);
    expect(batches).toEqual([50]);
    expect(await t.db.deadLetter.count()).toBe(150);
  });
});
