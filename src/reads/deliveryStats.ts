// Delivery charts per event type or per target over the last hour or day, from the delivery rollups
// (db/sql/deliveryRollups.ts): never a scan of delivery_attempts.
import type { Db } from './db.ts';
import { deliveryRollupsSql, type DeliveryGrouping, type DeliveryRollupRow } from '../db/sql/deliveryRollups.ts';
import { runSql } from '../db/runSql.ts';
import { COARSE_STEP_MINUTES, percentileOfBuckets } from '../domain/deliveryRollups.ts';

export type { DeliveryGrouping };
export type DeliveryWindow = 'HOUR' | 'DAY';

/** Each window's points: 60 one-minute steps, or 96 steps of 15 minutes. */
export const WINDOW_STEPS: Record<DeliveryWindow, { steps: number; stepMinutes: number }> = {
  HOUR: { steps: 60, stepMinutes: 1 },
  // The ledger keeps minutes older than two hours only in these steps (compactDeliveryRollups).
  DAY: { steps: 96, stepMinutes: COARSE_STEP_MINUTES },
};

export interface DeliverySeries {
  key: string;
  deliveries: number;
  succeeded: number;
  /** Deliveries and successes per minute at each step (a step's count over its minutes). */
  perMinute: number[];
  succeededPerMinute: number[];
  p50Ms: number | null;
  p95Ms: number | null;
}

export interface DeliveryStats {
  window: DeliveryWindow;
  groupBy: DeliveryGrouping;
  stepMinutes: number;
  /** Each step's start; the last step holds `now`. */
  stepStarts: Date[];
  /** Most deliveries first (ties by key). */
  series: DeliverySeries[];
}

/** The window's steps, aligned to UTC step boundaries, the last one holding `now`. */
export function windowSteps(window: DeliveryWindow, now: Date): { from: Date; to: Date; stepMinutes: number; stepStarts: Date[] } {
  const { steps, stepMinutes } = WINDOW_STEPS[window];
  const stepMs = stepMinutes * 60_000;
  const to = Math.floor(now.getTime() / stepMs) * stepMs + stepMs;
  const from = to - steps * stepMs;
  return { from: new Date(from), to: new Date(to), stepMinutes, stepStarts: Array.from({ length: steps }, (_, i) => new Date(from + i * stepMs)) };
}

export async function readDeliveryStats(db: Db, window: DeliveryWindow, groupBy: DeliveryGrouping, now: Date): Promise<DeliveryStats> {
  const { from, to, stepMinutes, stepStarts } = windowSteps(window, now);
  const rows = await runSql<DeliveryRollupRow>(db, deliveryRollupsSql(groupBy, from, to, stepMinutes));
  const stepMs = stepMinutes * 60_000;
  const groups = new Map<string, { deliveries: number[]; succeeded: number[]; histogram: Map<number, number> }>();
  const groupOf = (key: string) => {
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { deliveries: stepStarts.map(() => 0), succeeded: stepStarts.map(() => 0), histogram: new Map() }));
    return g;
  };
  for (const r of rows) {
    const g = groupOf(r.key);
    if (r.stepStart) {
      const i = Math.round((r.stepStart.getTime() - from.getTime()) / stepMs);
      g.deliveries[i] = Number(r.deliveries);
      g.succeeded[i] = Number(r.succeeded);
    } else if (r.latencyBucket !== null) {
      g.histogram.set(r.latencyBucket, Number(r.deliveries));
    }
  }
  const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
  const series = [...groups].map(([key, g]): DeliverySeries => ({
    key,
    deliveries: sum(g.deliveries),
    succeeded: sum(g.succeeded),
    perMinute: g.deliveries.map((n) => n / stepMinutes),
    succeededPerMinute: g.succeeded.map((n) => n / stepMinutes),
    p50Ms: percentileOfBuckets(g.histogram, 0.5),
    p95Ms: percentileOfBuckets(g.histogram, 0.95),
  }));
  series.sort((a, b) => b.deliveries - a.deliveries || (a.key < b.key ? -1 : 1));
  return { window, groupBy, stepMinutes, stepStarts, series };
}
