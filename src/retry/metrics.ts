// Prometheus metrics for the retry engine. Counters and the latency histogram are fed by the
// retry pass; queue depth and the oldest PENDING age are read from the database at scrape time,
// so every instance reports the same shared truth.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../db/createDb.ts';

export interface RetryMetrics {
  readonly registry: Registry;
  observeAttempt(eventType: string, outcome: string, durationMs: number): void;
  observeLeaseLost(count: number): void;
  observeClaimed(count: number): void;
  /** Where `lazarus_deliveries_in_flight` reads from at scrape time (the retry loop's slots). */
  readInFlightFrom(read: () => number): void;
}

export function createRetryMetrics(db: Db, registry = new Registry()): RetryMetrics {
  const attempts = new Counter({
    name: 'lazarus_delivery_attempts_total', help: 'Delivery attempts by event type and outcome.',
    labelNames: ['event_type', 'outcome'], registers: [registry],
  });
  const latency = new Histogram({
    name: 'lazarus_delivery_duration_seconds', help: 'Time from the start of a delivery to its result.',
    labelNames: ['event_type'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [registry],
  });
  const leaseLost = new Counter({
    name: 'lazarus_lease_lost_total', help: 'Deliveries whose result was not written because another worker owned the event by then.',
    registers: [registry],
  });
  const claimed = new Counter({ name: 'lazarus_claimed_total', help: 'Events claimed by this process.', registers: [registry] });
  let readInFlight = () => 0;
  new Gauge({
    name: 'lazarus_deliveries_in_flight',
    help: 'Deliveries this process is running or recording now; at RETRY_CONCURRENCY it claims nothing more.',
    registers: [registry],
    collect() {
      this.set(readInFlight());
    },
  });
  new Gauge({
    name: 'lazarus_dead_letters', help: 'Dead letters by status and event type.', labelNames: ['status', 'event_type'], registers: [registry],
    async collect() {
      // From the rollups (kept exact by the triggers, in the writers' transactions) rather than
      // counting the table at every scrape: ~86k rollup rows instead of 1M events in bench:read's seed.
      const rows = await db.$queryRaw<{ status: string; event_type: string; n: number }[]>`
        select status::text, event_type, sum(count)::int as n from dead_letter_rollups group by 1, 2 having sum(count) <> 0`;
      this.reset();
      for (const r of rows) this.set({ status: r.status, event_type: r.event_type }, r.n);
    },
  });
  new Gauge({
    name: 'lazarus_oldest_pending_age_seconds', help: 'Age of the oldest PENDING event that is due (0 when none).', registers: [registry],
    async collect() {
      const [row] = await db.$queryRaw<{ age: number | null }[]>`
        select extract(epoch from now() - min(next_attempt_at))::float8 as age
          from dead_letters where status = 'PENDING' and next_attempt_at <= now()`;
      this.set(row?.age ?? 0);
    },
  });
  return {
    registry,
    observeAttempt(eventType, outcome, durationMs) {
      attempts.inc({ event_type: eventType, outcome });
      latency.observe({ event_type: eventType }, durationMs / 1000);
    },
    observeLeaseLost: (count) => leaseLost.inc(count),
    observeClaimed: (count) => claimed.inc(count),
    readInFlightFrom: (read) => {
      readInFlight = read;
    },
  };
}
