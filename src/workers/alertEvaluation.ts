// Metric alert triggers (EXHAUSTED_RATE, OLDEST_PENDING_AGE, BACKLOG), evaluated on the service's
// one periodic shape (the 'alert evaluation' job in jobs.ts). Every instance may evaluate at once: the raise is throttled per rule in the
// database (lazarus_raise_alert's conditional upsert), so the instances never raise twice within a
// rule's window. A figure above the threshold keeps raising once per window while it stays there.
import type { Db } from '../db/createDb.ts';
import { readAlertFigures } from '../db/sql/readAlertFigures.ts';
import { METRIC_TRIGGERS } from '../domain/alertRules.ts';
import { metricValue, raiseMetricAlert, type MetricAlertTrigger } from '../domain/alerts.ts';

export const DEFAULT_ALERT_EVALUATE_INTERVAL_MS = 15_000;

export interface AlertEvaluation {
  /** Enabled metric rules compared. */
  evaluated: number;
  /** Ids of the alerts raised (throttled rules raise none). */
  raised: bigint[];
}

/** One evaluation: reads the figures once (only when a metric rule is enabled) and raises per rule. */
export async function evaluateAlertRules(db: Db): Promise<AlertEvaluation> {
  const rules = await db.alertRule.findMany({ where: { enabled: true, trigger: { in: [...METRIC_TRIGGERS] } }, orderBy: { id: 'asc' } });
  if (rules.length === 0) return { evaluated: 0, raised: [] };
  const figures = await readAlertFigures(db);
  const raised: bigint[] = [];
  for (const rule of rules) {
    const trigger = rule.trigger as MetricAlertTrigger;
    const threshold = rule.threshold ?? 0;
    const { value, unit } = metricValue(trigger, figures);
    if (!(value > threshold)) continue;
    raised.push(...await raiseMetricAlert(db, {
      ruleId: rule.id, trigger,
      summary: `${value} ${unit}, above the threshold of ${threshold}`,
      details: { value, threshold, figures },
    }));
  }
  return { evaluated: rules.length, raised };
}
