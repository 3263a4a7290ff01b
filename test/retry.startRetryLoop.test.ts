import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { purgeFinishedDeadLetters } from '../src/db/sql/purgeFinishedDeadLetters.ts';
import type { Deliver } from '../src/workers/retry/delivery.ts';
import { createRetryMetrics } from '../src/workers/retry/metrics.ts';
import { createSlots } from '../src/workers/retry/slots.ts';
import { startRetryLoop, type RetryLoop, type RetryLoopDeps } from '../src/workers/retry/startRetryLoop.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { attemptsOf, setPolicy, silentLogger, statusOf } from './helpers/retry.ts';

const t = useTestDatabase();
const loops: RetryLoop[] = [];
afterEach(async () => {
  await Promise.all(loops.splice(0).map((l) => l.stop()));
});

const ok = { ok: true as const, statusCode: null, responseBody: null };
function start(deliver: Deliver, overrides: Partial<RetryLoopDeps> = {}, config: Partial<RetryLoopDeps['config']> = {}): RetryLoop {
  const loop = startRetryLoop({
    db: t.db,
    deliver,
    logger: silentLogger,
    inProcessEventTypes: ['order.placed'],
    random: () => 0,
    config: {
      workerId: 'worker-a', batchSize: 10, concurrency: 4, leaseSeconds: 30, pollIntervalMs: 60_000,
      shutdownTimeoutMs: 5_000, ...config,
    },
    ...overrides,
  });
  loops.push(loop);
  return loop;
}
async function passUntil(loop: RetryLoop, done: () => Promise<boolean>) {
  while (!(await done())) {
    loop.poke();
    await once(loop.events, 'passCompleted');
  }
}

describe('startRetryLoop', () => {
  it('runs a pass on a wake-up hint without waiting for the poll interval', async () => {
    let hint: () => void = () => {};
    const loop = start(async () => ok, { wake: (fn) => ((hint = fn), () => {}) });
    await once(loop.events, 'passCompleted');
    const event = await insertDeadLetter(t.db);

    const next = once(loop.events, 'passCompleted');
    hint();
    const [summary] = await next;

    expect(summary).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'SUCCEEDED' });
  });

  it('runs one pass for a burst of hints, not one per hint', async () => {
    let hint: () => void = () => {};
    const loop = start(async () => ok, { wake: (fn) => ((hint = fn), () => {}) });
    await once(loop.events, 'passCompleted');
    let passes = 0;
    loop.events.on('passCompleted', () => (passes += 1));

    const next = once(loop.events, 'passCompleted');
    const burstStarted = Date.now();
    for (let i = 0; i < 200; i++) hint();
    await next;
    // The burst's hints all land within one wake-up gap: one pass answers them all.
    const settled = once(loop.events, 'passCompleted');
    hint();
    await settled;
    expect(passes).toBe(2);
    expect(Date.now() - burstStarted).toBeGreaterThanOrEqual(50);
  });

  it('keeps per-key order through a failure in the middle', async () => {
    await setPolicy(t.db, 'order.placed', { ordered: true, backoff: 'FIXED', baseDelayMs: 0, maxDelayMs: 0 });
    const events: { id: bigint }[] = [];
    for (let seq = 1; seq <= 3; seq++) events.push(await insertDeadLetter(t.db, { orderingKey: 'k', orderingSeq: seq }));
    const delivered: bigint[] = [];
    let failedOnce = false;
    const loop = start(async (e) => {
      delivered.push(e.id);
      if (e.id === events[1]!.id && !failedOnce) {
        failedOnce = true;
        throw new Error('downstream 500');
      }
      return ok;
    });

    await passUntil(loop, async () => (await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) === 3);

    expect(delivered).toEqual([events[0]!.id, events[1]!.id, events[1]!.id, events[2]!.id]);
    expect((await attemptsOf(t.db, events[1]!.id)).map((a) => a.outcome)).toEqual(['FAILED', 'SUCCEEDED']);
  });

  it('claims and delivers the next batch while a slow delivery ends the last one', async () => {
    const events: { id: bigint }[] = [];
    for (let i = 0; i < 4; i++) events.push(await insertDeadLetter(t.db));
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const loop = start(async (e) => {
      if (e.id === events[0]!.id) await gate;
      return ok;
    }, {}, { batchSize: 2, concurrency: 2 });

    // The first pass never completes while its first event hangs; the others finish around it.
    await passUntil(loop, async () => (await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) === 3);
    expect(await statusOf(t.db, events[0]!.id)).toMatchObject({ status: 'PROCESSING' });

    release();
    await passUntil(loop, async () => (await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) === 4);
    for (const e of events) expect(await attemptsOf(t.db, e.id)).toEqual([expect.objectContaining({ attemptNumber: 1, outcome: 'SUCCEEDED' })]);
  });

  it("holds a type's concurrency limit while passes overlap", async () => {
    await setPolicy(t.db, 'order.placed', { concurrency: 2 });
    for (let i = 0; i < 6; i++) await insertDeadLetter(t.db);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let inFlight = 0;
    let most = 0;
    let twoStarted: () => void;
    const running = new Promise<void>((resolve) => (twoStarted = resolve));
    const loop = start(async () => {
      most = Math.max(most, ++inFlight);
      if (inFlight === 2) twoStarted();
      await gate;
      inFlight -= 1;
      return ok;
    });
    await running;

    // Two of the four slots are free, but a new pass finds the type at its limit.
    const next = once(loop.events, 'passCompleted');
    loop.poke();
    expect((await next)[0]).toMatchObject({ claimed: 0 });
    expect(await t.db.deadLetter.count({ where: { status: 'PROCESSING' } })).toBe(2);

    release();
    await passUntil(loop, async () => (await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) === 6);
    expect(most).toBe(2);
  });

  it('reports its busy delivery slots as lazarus_deliveries_in_flight', async () => {
    const metrics = createRetryMetrics(t.db);
    const inFlight = async () => Number((await metrics.registry.metrics()).match(/^lazarus_deliveries_in_flight (\S+)$/m)![1]);
    for (let i = 0; i < 3; i++) await insertDeadLetter(t.db);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    let allStarted: () => void;
    const running = new Promise<void>((resolve) => (allStarted = resolve));
    const loop = start(async () => {
      if (++started === 2) allStarted();
      await gate;
      return ok;
    }, { metrics }, { concurrency: 2 });
    await running;

    expect(await inFlight()).toBe(2);
    release();
    await passUntil(loop, async () => (await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) === 3);
    expect(await inFlight()).toBe(0);
  });

  it('keeps deliveries within the concurrency limit across overlapping passes', async () => {
    for (let i = 0; i < 30; i++) await insertDeadLetter(t.db);
    let inFlight = 0;
    let most = 0;
    const loop = start(async () => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 2)); // a target that takes a moment
      inFlight -= 1;
      return ok;
    }, {}, { batchSize: 4, concurrency: 3 });

    await passUntil(loop, async () => (await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) === 30);

    expect(most).toBe(3);
    expect(await t.db.deliveryAttempt.count()).toBe(30);
  });

  it('lets in-flight deliveries finish on stop and claims nothing after', async () => {
    const event = await insertDeadLetter(t.db);
    let finish: () => void = () => {};
    let started: () => void;
    const isStarted = new Promise<void>((resolve) => (started = resolve));
    const loop = start(async () => {
      started();
      await new Promise<void>((resolve) => (finish = resolve));
      return ok;
    });
    await isStarted;

    const stopped = loop.stop();
    await insertDeadLetter(t.db);
    finish();
    await stopped;

    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(await t.db.deadLetter.count({ where: { status: 'PENDING', attempts: 0 } })).toBe(1);
  });

  it('releases deliveries still running at the shutdown timeout, refunding the attempt', async () => {
    const events = [await insertDeadLetter(t.db), await insertDeadLetter(t.db)];
    let started = 0;
    let bothStarted: () => void;
    const running = new Promise<void>((resolve) => (bothStarted = resolve));
    const loop = start(async (_e, _p, signal) => {
      if (++started === 2) bothStarted();
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      return ok;
    }, {}, { shutdownTimeoutMs: 50 });
    await running;

    await loop.stop();

    for (const e of events) {
      expect(await statusOf(t.db, e.id)).toMatchObject({ status: 'PENDING', attempts: 0, leaseToken: null });
      expect(await attemptsOf(t.db, e.id)).toEqual([]);
    }
  });
});

describe('createSlots', () => {
  it('hands a released slot to the first waiter, and a waiter whose signal aborts gives up its place', async () => {
    const slots = createSlots(1);
    const never = new AbortController().signal;
    expect(await slots.acquire(never)).toBe(true);
    const quitter = new AbortController();
    const first = slots.acquire(quitter.signal);
    const second = slots.acquire(never);
    quitter.abort();
    expect(await first).toBe(false);

    slots.release();
    expect(await second).toBe(true);
    expect(slots.inUse).toBe(1);
    slots.release();
    expect(slots.inUse).toBe(0);
  });
});

describe('purgeFinishedDeadLetters', () => {
  it('purges only finished events older than the retention age, never PENDING, PROCESSING or EXHAUSTED', async () => {
    const old = new Date(Date.now() - 10 * 86_400_000);
    const kept: { id: bigint }[] = [];
    for (const status of ['PENDING', 'EXHAUSTED'] as const) kept.push(await insertDeadLetter(t.db, { status, createdAt: old }));
    kept.push(await insertDeadLetter(t.db, { status: 'PROCESSING', leaseOwner: 'w', leaseToken: crypto.randomUUID(), leaseExpiresAt: new Date() }));
    kept.push(await insertDeadLetter(t.db, { status: 'SUCCEEDED' }));
    const purged: { id: bigint }[] = [];
    for (const status of ['SUCCEEDED', 'RESOLVED', 'DISCARDED'] as const) purged.push(await insertDeadLetter(t.db, { status, resolvedAt: old }));

    expect((await purgeFinishedDeadLetters(t.db, 7 * 86_400_000, 100))?.purged).toBe(3);

    const left = await t.db.deadLetter.findMany({ select: { id: true }, orderBy: { id: 'asc' } });
    expect(left.map((r) => r.id)).toEqual(kept.map((r) => r.id));
  });
});

describe('the policy and the clock the loop follows', () => {
  it('delivers an event of a type whose policy was created a moment ago under that policy, charging nothing to "*"', async () => {
    const delivered: { type: string; target: string | null }[] = [];
    const loop = start(async (event, policy) => {
      const target = (policy.targetSettings as { url?: string } | null)?.url ?? null;
      delivered.push({ type: event.eventType, target });
      return target ? ok : { ok: false, outcome: 'FAILED', errorMessage: 'no delivery target configured', statusCode: null, responseBody: null, retryAfterMs: null };
    }, { inProcessEventTypes: [] });
    await setPolicy(t.db, 'warm.up', { targetUrl: 'https://hooks.example.com/warm' });
    const warm = await insertDeadLetter(t.db, { eventType: 'warm.up' });
    await passUntil(loop, async () => (await statusOf(t.db, warm.id)).status === 'SUCCEEDED');

    // Policy, then event, then a pass: all within the second a cached copy of the policies lived.
    await setPolicy(t.db, 'just.created', { targetUrl: 'https://hooks.example.com/new' });
    const event = await insertDeadLetter(t.db, { eventType: 'just.created' });
    await passUntil(loop, async () => (await statusOf(t.db, event.id)).status === 'SUCCEEDED');

    expect(delivered.filter((d) => d.type === 'just.created')).toEqual([{ type: 'just.created', target: 'https://hooks.example.com/new' }]);
    expect(await attemptsOf(t.db, event.id)).toEqual([expect.objectContaining({ attemptNumber: 1, outcome: 'SUCCEEDED' })]);
  });

  it('backs off by the policy, not by the poll interval: a 300 ms FIXED backoff is retried well before a 10 s poll', async () => {
    await setPolicy(t.db, 'order.placed', { backoff: 'FIXED', baseDelayMs: 300, maxDelayMs: 300, maxAttempts: 4 });
    const event = await insertDeadLetter(t.db);
    const failing: Deliver = async () => ({ ok: false, outcome: 'FAILED', errorMessage: 'down', statusCode: 503, responseBody: null, retryAfterMs: null });
    const loop = start(failing, {}, { pollIntervalMs: 10_000 });

    while ((await statusOf(t.db, event.id)).status !== 'EXHAUSTED') await once(loop.events, 'passCompleted');

    const started = (await t.db.deliveryAttempt.findMany({ where: { deadLetterId: event.id }, orderBy: { id: 'asc' }, select: { startedAt: true } }))
      .map((a) => a.startedAt.getTime());
    const gaps = started.slice(1).map((at, i) => at - started[i]!);
    expect(gaps).toHaveLength(3);
    // At least the backoff; far below the poll interval that bounded it before (a loaded machine
    // may add a second, not ten).
    for (const gap of gaps) {
      expect(gap).toBeGreaterThanOrEqual(290);
      expect(gap).toBeLessThan(5_000);
    }
  });
});
