import { describe, expect, it } from 'vitest';
import { createRetryMetrics } from '../src/workers/retry/metrics.ts';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { passDeps } from './helpers/retry.ts';

const t = useTestDatabase();

describe('retry metrics', () => {
  it('reports depth by status and type, oldest due age, attempts by outcome and latency', async () => {
    const metrics = createRetryMetrics(t.db);
    await insertDeadLetter(t.db, { eventType: 'order.placed' });
    await insertDeadLetter(t.db, { eventType: 'invoice.sent', nextAttemptAt: new Date(Date.now() - 60_000) });
    await insertDeadLetter(t.db, { eventType: 'invoice.sent', status: 'EXHAUSTED' });

    await runRetryPass(passDeps(t.db, {
      metrics, inProcessEventTypes: ['order.placed'], deliver: async (e) => (e.eventType === 'order.placed' ? { ok: true, statusCode: null, responseBody: null } : { ok: false, outcome: 'FAILED', errorMessage: 'x', statusCode: null, responseBody: null, retryAfterMs: null }),
    }));
    const text = await metrics.registry.metrics();

    expect(text).toContain('lazarus_dead_letters{status="SUCCEEDED",event_type="order.placed"} 1');
    expect(text).toContain('lazarus_dead_letters{status="PENDING",event_type="invoice.sent"} 1');
    expect(text).toContain('lazarus_dead_letters{status="EXHAUSTED",event_type="invoice.sent"} 1');
    // The delivered event left PENDING (and passed through PROCESSING): no series of 0 stays behind.
    expect(text).not.toMatch(/lazarus_dead_letters\{status="(PENDING|PROCESSING)",event_type="order.placed"\}/);
    expect(text).toContain('lazarus_delivery_attempts_total{event_type="order.placed",outcome="SUCCEEDED"} 1');
    expect(text).toContain('lazarus_delivery_duration_seconds_count{event_type="order.placed"} 1');
    expect(text).toContain('lazarus_claimed_total 1');
    const age = Number(text.match(/^lazarus_oldest_pending_age_seconds (\S+)$/m)![1]);
    expect(age).toBeGreaterThanOrEqual(59);
  });
});

describe('the event_type label', () => {
  it('keeps the largest types past the cap on the backlog gauge and sums the rest as _other', async () => {
    const metrics = createRetryMetrics(t.db, { maxEventTypes: 2 });
    for (const [eventType, n] of [['a', 3], ['b', 1], ['c', 5], ['d', 1]] as const) {
      for (let i = 0; i < n; i++) await insertDeadLetter(t.db, { eventType, status: 'EXHAUSTED' });
    }

    const text = await metrics.registry.metrics();

    const series = text.split('\n').filter((l) => l.startsWith('lazarus_dead_letters{')).sort();
    expect(series).toEqual([
      'lazarus_dead_letters{status="EXHAUSTED",event_type="_other"} 2',
      'lazarus_dead_letters{status="EXHAUSTED",event_type="a"} 3',
      'lazarus_dead_letters{status="EXHAUSTED",event_type="c"} 5',
    ]);
  });

  it('counts attempts of types past the cap as _other, keeping the types it saw first', async () => {
    const metrics = createRetryMetrics(t.db, { maxEventTypes: 2 });
    for (const eventType of ['a', 'b', 'c', 'a', 'd']) metrics.observeAttempt(eventType, 'FAILED', 5);

    const text = await metrics.registry.metrics();

    expect(text).toContain('lazarus_delivery_attempts_total{event_type="a",outcome="FAILED"} 2');
    expect(text).toContain('lazarus_delivery_attempts_total{event_type="b",outcome="FAILED"} 1');
    expect(text).toContain('lazarus_delivery_attempts_total{event_type="_other",outcome="FAILED"} 2');
    expect(text).toContain('lazarus_delivery_duration_seconds_count{event_type="_other"} 2');
  });
});
