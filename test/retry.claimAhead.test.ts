import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { Deliver } from '../src/workers/retry/delivery.ts';
import { createRetryMetrics, type RetryMetrics } from '../src/workers/retry/metrics.ts';
import { startRetryLoop, type RetryLoop, type RetryLoopConfig } from '../src/workers/retry/startRetryLoop.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { attemptsOf, silentLogger, statusOf } from './helpers/retry.ts';

const t = useTestDatabase();
const loops: RetryLoop[] = [];
afterEach(async () => {
  await Promise.all(loops.splice(0).map((l) => l.stop()));
});

const ok = { ok: true as const, statusCode: null, responseBody: null };

/** A loop whose claims (of at least one event) are listed in `claims`; `claimed(n)` resolves at the n-th. */
function start(deliver: Deliver, config: Partial<RetryLoopConfig>) {
  const claims: number[] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const metrics: RetryMetrics = {
    ...createRetryMetrics(t.db),
    observeClaimed: (count) => {
      if (count === 0) return;
      claims.push(count);
      for (const w of waiters) if (claims.length >= w.n) w.resolve();
    },
  };
  const loop = startRetryLoop({
    db: t.db, deliver, logger: silentLogger, inProcessEventTypes: ['order.placed'], random: () => 0, metrics,
    config: { workerId: 'worker-a', batchSize: 4, concurrency: 2, leaseSeconds: 30, pollIntervalMs: 60_000, shutdownTimeoutMs: 5_000, ...config },
  });
  loops.push(loop);
  const claimed = (n: number) => new Promise<void>((resolve) => {
    if (claims.length >= n) resolve();
    else waiters.push({ n, resolve });
  });
  return { loop, claims, claimed };
}

const succeeded = () => t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } });

describe('claiming ahead', () => {
  it('claims the next batch while every slot is busy with the last one and some of it has not started', async () => {
    const events: { id: bigint }[] = [];
    for (let i = 0; i < 8; i++) events.push(await insertDeadLetter(t.db));
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The first batch: its 1st and 3rd events hang (both slots busy), its 2nd is delivered, its 4th waits.
    const { loop, claims, claimed } = start(async (e) => {
      if (e.id === events[0]!.id || e.id === events[2]!.id) await gate;
      return ok;
    }, {});

    await claimed(2);
    expect(claims).toEqual([4, 4]);
    expect(await statusOf(t.db, events[3]!.id)).toMatchObject({ status: 'PROCESSING' });
    expect(await statusOf(t.db, events[7]!.id)).toMatchObject({ status: 'PROCESSING' });

    release();
    while ((await succeeded()) < 8) await once(loop.events, 'passCompleted');
    for (const e of events) expect(await attemptsOf(t.db, e.id)).toEqual([expect.objectContaining({ attemptNumber: 1, outcome: 'SUCCEEDED' })]);
  });

  it('claims nothing ahead while every slot is stuck on a receiver that does not answer', async () => {
    const events: { id: bigint }[] = [];
    for (let i = 0; i < 6; i++) events.push(await insertDeadLetter(t.db));
    let started = 0;
    let bothStarted: () => void;
    const stuck = new Promise<void>((resolve) => (bothStarted = resolve));
    const { loop, claims } = start(async (_e, _p, signal) => {
      if (++started === 2) bothStarted();
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      return ok;
    }, { batchSize: 2, shutdownTimeoutMs: 50 });
    await stuck;
    // A round trip to the database: time for a claim ahead to begin, were it to.
    expect(await t.db.deadLetter.count({ where: { status: 'PROCESSING' } })).toBe(2);

    await loop.stop();

    expect(claims).toEqual([2]);
    for (const e of events.slice(2)) {
      expect(await statusOf(t.db, e.id)).toMatchObject({ status: 'PENDING', attempts: 0, leaseToken: null });
      expect(await attemptsOf(t.db, e.id)).toEqual([]);
    }
  });

  it('with RETRY_CLAIM_AHEAD off, claims the next batch only once the last one has all started', async () => {
    const events: { id: bigint }[] = [];
    for (let i = 0; i < 8; i++) events.push(await insertDeadLetter(t.db));
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let startedThree: () => void;
    const threeStarted = new Promise<void>((resolve) => (startedThree = resolve));
    let started = 0;
    const { loop, claims } = start(async (e) => {
      if (++started === 3) startedThree();
      if (e.id === events[0]!.id || e.id === events[2]!.id) await gate;
      return ok;
    }, { claimAhead: false, shutdownTimeoutMs: 50 });
    await threeStarted;
    expect(await t.db.deadLetter.count({ where: { status: 'PENDING' } })).toBe(4);

    // The first batch's 4th event waits for a slot: no second claim yet, and none after stop().
    await loop.stop();
    release();

    expect(claims).toEqual([4]);
    for (const e of events.slice(4)) expect(await statusOf(t.db, e.id)).toMatchObject({ status: 'PENDING', attempts: 0 });
  });
});
