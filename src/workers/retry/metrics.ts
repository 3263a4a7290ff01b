// Prometheus metrics for the retry engine. Counters and the latency histogram are fed by the
// retry pass; queue depth and the oldest PENDING age are read from the database at scrape time,
// so every instance reports the same shared truth.
//
// Event types are a label, and a producer can invent thousands of them: every series of a type is
// kept in Prometheus for its retention, so the label is capped (LAZARUS_METRICS_MAX_EVENT_TYPES).
// Past the cap, the backlog gauge keeps the largest types and sums the rest as `_other`; the
// counters keep the first types this process saw (a counter's labels must not move) and count the
// rest as `_other`.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DEFAULT_METRICS_MAX_EVENT_TYPES } from '../../config.ts';
import type { Db } from '../../db/createDb.ts';
import { deadLettersByStatusAndType, oldestDuePendingAgeSeconds } from '../../db/sql/metricsReads.ts';
import { TARGET_KINDS } from '../targets/registry.ts';
import { targetHealth, type TargetHealth } from '../targets/targetKind.ts';

/** The event_type label of everything past the cap. */
export const OTHER_EVENT_TYPES = '_other';

export interface RetryMetricsOptions {
  registry?: Registry;
  /** Distinct event_type label values per metric; the rest are reported as `_other`. Default 50. */
  maxEventTypes?: number;
  /** The target connections for `lazarus_target_connected`; default every registered kind's. */
  targetHealth?: () => TargetHealth[];
}

export interface RetryMetrics {
  readonly registry: Registry;
  observeAttempt(eventType: string, outcome: string, durationMs: number): void;
  observeLeaseLost(count: number): void;
  observeClaimed(count: number): void;
  /** Where `lazarus_deliveries_in_flight` reads from at scrape time (the retry loop's slots). */
  readInFlightFrom(read: () => number): void;
  /** `lazarus_delivery_slots`: this process's RETRY_CONCURRENCY, for saturation alerts. */
  setDeliverySlots(slots: number): void;
}

export function createRetryMetrics(db: Db, options: RetryMetricsOptions = {}): RetryMetrics {
  const registry = options.registry ?? new Registry();
  const maxEventTypes = options.maxEventTypes ?? DEFAULT_METRICS_MAX_EVENT_TYPES;
  const seenEventTypes = new Set<string>();
  const counterLabel = (eventType: string): string => {
    if (seenEventTypes.has(eventType)) return eventType;
    if (seenEventTypes.size >= maxEventTypes) return OTHER_EVENT_TYPES;
    seenEventTypes.add(eventType);
    return eventType;
  };
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
  const slots = new Gauge({
    name: 'lazarus_delivery_slots', help: 'Deliveries this process may run at once (RETRY_CONCURRENCY); 0 without a retry loop.',
    registers: [registry],
  });
  new Gauge({
    name: 'lazarus_dead_letters', help: 'Dead letters by status and event type.', labelNames: ['status', 'event_type'], registers: [registry],
    async collect() {
      const rows = await deadLettersByStatusAndType(db);
      this.reset();
      for (const [key, n] of capEventTypes(rows, maxEventTypes)) {
        const [status, eventType] = key.split('\0') as [string, string];
        this.set({ status, event_type: eventType }, n);
      }
    },
  });
  new Gauge({
    name: 'lazarus_oldest_pending_age_seconds', help: 'Age of the oldest PENDING event that is due (0 when none).', registers: [registry],
    async collect() {
      this.set((await oldestDuePendingAgeSeconds(db)) ?? 0);
    },
  });
  const readTargetHealth = options.targetHealth ?? (() => targetHealth(TARGET_KINDS));
  new Gauge({
    name: 'lazarus_target_connected',
    help: 'Each connection to a delivery target (a broker) this process holds: 1 when connected, 0 when connecting or down.',
    labelNames: ['kind', 'target'], registers: [registry],
    collect() {
      this.reset();
      for (const h of readTargetHealth()) this.set({ kind: h.kind, target: h.target }, h.state === 'CONNECTED' ? 1 : 0);
    },
  });
  return {
    registry,
    observeAttempt(eventType, outcome, durationMs) {
      const label = counterLabel(eventType);
      attempts.inc({ event_type: label, outcome });
      latency.observe({ event_type: label }, durationMs / 1000);
    },
    observeLeaseLost: (count) => leaseLost.inc(count),
    observeClaimed: (count) => claimed.inc(count),
    readInFlightFrom: (read) => {
      readInFlight = read;
    },
    setDeliverySlots: (n) => slots.set(n),
  };
}

/** Counts keyed `status\0event_type`, the largest `max` types by their total kept by name. */
function capEventTypes(rows: readonly { status: string; event_type: string; n: number }[], max: number): Map<string, number> {
  const totals = new Map<string, number>();
  for (const r of rows) totals.set(r.event_type, (totals.get(r.event_type) ?? 0) + r.n);
  const kept = new Set([...totals].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, max).map(([type]) => type));
  const out = new Map<string, number>();
  for (const r of rows) {
    const key = `${r.status}\0${kept.has(r.event_type) ? r.event_type : OTHER_EVENT_TYPES}`;
    out.set(key, (out.get(key) ?? 0) + r.n);
  }
  return out;
}
