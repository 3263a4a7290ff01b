import { describe, expect, it } from 'vitest';
import { createDb } from '../src/db/createDb.ts';
import { claimDueDeadLetters, MERGE_TYPE_LIMIT } from '../src/db/sql/claimDueDeadLetters.ts';
import { completeDelivery } from '../src/db/sql/completeDelivery.ts';
import { failDeliveries, failDelivery } from '../src/db/sql/failDelivery.ts';
import { renewLeases } from '../src/db/sql/renewLeases.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { attemptsOf, setPolicy, statusOf } from './helpers/retry.ts';

const t = useTestDatabase();
const claimAs = (workerId: string, limit = 10) =>
  claimDueDeadLetters(t.db, { limit, workerId, leaseSeconds: 30, inProcessEventTypes: ['order.placed'] });
const expireLeases = () => t.db.$executeRaw`update dead_letters_current set lease_expires_at = now() - interval '1 second' where status = 'PROCESSING'`;
const attempt = { workerId: 'worker-a', durationMs: 3, statusCode: 200, responseBody: null };

describe('claimDueDeadLetters', () => {
  it('lets two concurrent claims take disjoint rows, each within its limit', async () => {
    for (let i = 0; i < 50; i++) await insertDeadLetter(t.db);
    const other = createDb(t.url, { poolMax: 2, acquireTimeoutMs: 5_000, statementTimeoutMs: 15_000, applicationName: 'lazarus-test-b' });
    try {
      const [a, b] = await Promise.all([
        claimAs('worker-a', 20),
        claimDueDeadLetters(other.db, { limit: 20, workerId: 'worker-b', leaseSeconds: 30, inProcessEventTypes: ['order.placed'] }),
      ]);
      expect(a.length).toBe(20);
      expect(b.length).toBe(20);
      const ids = new Set([...a, ...b].map((r) => r.id));
      expect(ids.size).toBe(40);
      expect(a.every((r) => r.attempts === 1)).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('does not let a worker whose lease expired overwrite the new owner’s result', async () => {
    const event = await insertDeadLetter(t.db);
    const [zombie] = await claimAs('worker-a');
    await expireLeases();
    const [owner] = await claimAs('worker-b');
    expect(owner!.leaseToken).not.toBe(zombie!.leaseToken);

    expect(await completeDelivery(t.db, { ...attempt, id: event.id, leaseToken: zombie!.leaseToken })).toBe(false);
    expect(await failDelivery(t.db, {
      ...attempt, workerId: 'worker-a', id: event.id, leaseToken: zombie!.leaseToken, outcome: 'FAILED',
      errorMessage: 'late', isPermanent: true, delayMs: 0, policyMaxAttempts: 10,
    })).toBe('LEASE_LOST');
    expect(await renewLeases(t.db, [{ id: event.id, leaseToken: zombie!.leaseToken }], 30)).toEqual([]);
    expect(await completeDelivery(t.db, { ...attempt, workerId: 'worker-b', id: event.id, leaseToken: owner!.leaseToken })).toBe(true);

    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    expect(await attemptsOf(t.db, event.id)).toEqual([
      { attemptNumber: 1, outcome: 'LEASE_LOST', statusCode: null, workerId: 'worker-a', errorMessage: 'lease expired before the attempt finished' },
      { attemptNumber: 2, outcome: 'SUCCEEDED', statusCode: 200, workerId: 'worker-b', errorMessage: null },
    ]);
  });

  it('records a batch of failures in one statement, each fenced by its own lease and ended by its own limits', async () => {
    const retried = await insertDeadLetter(t.db);
    const permanent = await insertDeadLetter(t.db);
    const lastAttempt = await insertDeadLetter(t.db, { maxAttempts: 1 });
    const stolen = await insertDeadLetter(t.db);
    const claims = new Map((await claimAs('worker-a')).map((c) => [c.id, c]));
    await t.db.$executeRaw`update dead_letters_current set lease_token = gen_random_uuid() where id = ${stolen.id}`;
    const failure = (id: bigint, isPermanent = false) => ({
      ...attempt, statusCode: 503, id, leaseToken: claims.get(id)!.leaseToken, outcome: isPermanent ? 'PERMANENT_FAILURE' as const : 'FAILED' as const,
      errorMessage: `failed ${id}`, isPermanent, delayMs: 60_000, policyMaxAttempts: 10,
    });

    const written = await failDeliveries(t.db, [failure(retried.id), failure(permanent.id, true), failure(lastAttempt.id), failure(stolen.id)]);

    expect([...written].sort(([a], [b]) => Number(a - b))).toEqual([[retried.id, 'PENDING'], [permanent.id, 'EXHAUSTED'], [lastAttempt.id, 'EXHAUSTED']]);
    expect(await statusOf(t.db, retried.id)).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect(await statusOf(t.db, stolen.id)).toMatchObject({ status: 'PROCESSING' });
    expect(await attemptsOf(t.db, permanent.id)).toEqual([
      { attemptNumber: 1, outcome: 'PERMANENT_FAILURE', statusCode: 503, workerId: 'worker-a', errorMessage: `failed ${permanent.id}` },
    ]);
    expect(await attemptsOf(t.db, stolen.id)).toEqual([]);
    const due = await t.db.$queryRaw<{ later: boolean }[]>`select next_attempt_at > now() + interval '50 seconds' as later from dead_letters_current where id = ${retried.id}`;
    expect(due).toEqual([{ later: true }]);
  });

  it('ends a poison event EXHAUSTED when its last attempt’s lease expires, instead of claiming it again', async () => {
    const event = await insertDeadLetter(t.db, { maxAttempts: 1 });
    await claimAs('worker-a');
    await expireLeases();

    expect(await claimAs('worker-b')).toEqual([]);

    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'EXHAUSTED', attempts: 1, leaseToken: null });
    expect((await attemptsOf(t.db, event.id)).map((a) => a.outcome)).toEqual(['LEASE_LOST']);
  });

  it('keeps events that are not yet due, or leased by a live worker', async () => {
    await insertDeadLetter(t.db, { nextAttemptAt: new Date(Date.now() + 3_600_000) });
    await insertDeadLetter(t.db);
    expect((await claimAs('worker-a')).length).toBe(1);
    expect(await claimAs('worker-b')).toEqual([]);
  });

  it('applies the per-type concurrency limit against leases already held', async () => {
    await setPolicy(t.db, 'order.placed', { concurrency: 3 });
    for (let i = 0; i < 10; i++) await insertDeadLetter(t.db);
    expect((await claimAs('worker-a')).length).toBe(3);
    expect(await claimAs('worker-b')).toEqual([]);
  });

  it('makes only the oldest unfinished event of each key eligible for ordered types, an EXHAUSTED head included', async () => {
    await setPolicy(t.db, 'order.placed', { ordered: true });
    const a1 = await insertDeadLetter(t.db, { orderingKey: 'a', orderingSeq: 1 });
    const a2 = await insertDeadLetter(t.db, { orderingKey: 'a', orderingSeq: 2 });
    const b1 = await insertDeadLetter(t.db, { orderingKey: 'b', orderingSeq: 1 });
    const loose = await insertDeadLetter(t.db);

    const first = await claimAs('worker-a');
    expect(first.map((r) => r.id).sort()).toEqual([a1.id, b1.id, loose.id].sort());
    expect(await claimAs('worker-a')).toEqual([]);

    const a1Claim = first.find((r) => r.id === a1.id)!;
    await failDelivery(t.db, { ...attempt, id: a1.id, leaseToken: a1Claim.leaseToken, outcome: 'PERMANENT_FAILURE', errorMessage: 'x', isPermanent: true, delayMs: 0, policyMaxAttempts: 10 });
    expect(await claimAs('worker-a')).toEqual([]);

    await t.db.deadLetter.update({ where: { id: a1.id }, data: { status: 'RESOLVED' } });
    expect((await claimAs('worker-a')).map((r) => r.id)).toEqual([a2.id]);
  });

  it('hands an expired lease of a type paused meanwhile back to PENDING instead of leaving it PROCESSING', async () => {
    const event = await insertDeadLetter(t.db);
    await claimAs('worker-a');
    await setPolicy(t.db, 'order.placed', { paused: true });
    await expireLeases();

    expect(await claimAs('worker-b')).toEqual([]);

    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'PENDING', attempts: 1, leaseToken: null });
    expect((await attemptsOf(t.db, event.id)).map((a) => a.outcome)).toEqual(['LEASE_LOST']);
  });

  describe('over several event types', () => {
    // Due times one second apart, oldest first in `order`; returns the rows in that order.
    const insertDue = async (order: string[]) => {
      const rows = [];
      for (const [i, eventType] of order.entries()) {
        rows.push(await insertDeadLetter(t.db, { eventType, nextAttemptAt: new Date(Date.now() - (order.length - i) * 1000) }));
      }
      return rows;
    };
    const claimTypes = (types: string[], limit: number, db = t.db, workerId = 'worker-a') =>
      claimDueDeadLetters(db, { limit, workerId, leaseSeconds: 30, inProcessEventTypes: types });

    it('takes the oldest due rows across deliverable types and passes over held ones, however many', async () => {
      await setPolicy(t.db, 'held.paused', { paused: true });
      // Held rows due before everything else: a type with no target and a paused type.
      await t.db.$executeRaw`
        insert into dead_letters (event_type, next_attempt_at)
        select (array['held.no-target', 'held.paused'])[1 + g % 2], now() - interval '1 hour' from generate_series(1, 500) g`;
      const rows = await insertDue(['a', 'b', 'b', 'c', 'a', 'c', 'b', 'a']);

      const first = await claimTypes(['a', 'b', 'c', 'held.paused'], 5);
      expect(first.map((r) => r.id)).toEqual(rows.slice(0, 5).map((r) => r.id));
      const second = await claimTypes(['a', 'b', 'c', 'held.paused'], 5);
      expect(second.map((r) => r.id)).toEqual(rows.slice(5).map((r) => r.id));
      const held = await t.db.deadLetter.count({ where: { eventType: { startsWith: 'held.' }, status: 'PENDING', attempts: 0 } });
      expect(held).toBe(500);
    });

    it('hands every claimed event the policy of its own type, the default where the type has none', async () => {
      await setPolicy(t.db, 'a', { maxAttempts: 3, timeoutMs: 1_000 });
      await setPolicy(t.db, 'b', { maxAttempts: 7, timeoutMs: 2_000 });
      await insertDue(['a', 'b', 'c', 'b', 'a', 'c', 'a', 'b']);

      const claimed = await claimTypes(['a', 'b', 'c'], 8);
      expect(claimed).toHaveLength(8);
      const defaults = await t.db.retryPolicy.findUniqueOrThrow({ where: { eventType: '*' } });
      const policyOf: Record<string, unknown[]> = { a: ['a', 3, 1_000], b: ['b', 7, 2_000], c: ['*', defaults.maxAttempts, defaults.timeoutMs] };
      for (const event of claimed) {
        expect([event.policy.eventType, event.policy.maxAttempts, event.policy.timeoutMs]).toEqual(policyOf[event.eventType]);
      }
    });

    it('lets two concurrent claims take disjoint rows, each within its limit', async () => {
      await insertDue(Array.from({ length: 60 }, (_, i) => ['a', 'b', 'c'][i % 3]!));
      const other = createDb(t.url, { poolMax: 2, acquireTimeoutMs: 5_000, statementTimeoutMs: 15_000, applicationName: 'lazarus-test-b' });
      try {
        const [a, b] = await Promise.all([claimTypes(['a', 'b', 'c'], 20), claimTypes(['a', 'b', 'c'], 20, other.db, 'worker-b')]);
        expect(a.length + b.length).toBeGreaterThanOrEqual(20);
        expect(Math.max(a.length, b.length)).toBeLessThanOrEqual(20);
        expect(new Set([...a, ...b].map((r) => r.id)).size).toBe(a.length + b.length);
      } finally {
        await other.close();
      }
    });

    it(`keeps due order and per-key heads with more than ${MERGE_TYPE_LIMIT} deliverable types`, async () => {
      const types = Array.from({ length: MERGE_TYPE_LIMIT + 6 }, (_, i) => `type.${String(i).padStart(3, '0')}`);
      await setPolicy(t.db, 'type.000', { ordered: true });
      const rows = await insertDue(types.toReversed());
      const behindHead = await insertDeadLetter(t.db, { eventType: 'type.000', orderingKey: 'k', nextAttemptAt: new Date(Date.now() - 3_600_000) });
      // The newest-due row of type.000 becomes the head of key k; the older-due row behind it waits.
      await t.db.deadLetter.update({ where: { id: rows.at(-1)!.id }, data: { orderingKey: 'k' } });

      const claimed = await claimTypes(types, 10);
      expect(claimed.map((r) => r.id)).toEqual(rows.slice(0, 10).map((r) => r.id));
      expect(claimed.some((r) => r.id === behindHead.id)).toBe(false);
    });
  });
});
