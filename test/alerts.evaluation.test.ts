// Metric alert triggers: each fires once per window while its figure is above the threshold, not
// at or below it, and two instances evaluating at once raise it once.
import { describe, expect, it } from 'vitest';
import type { AlertTrigger } from '../src/generated/prisma/enums.ts';
import { evaluateAlertRules } from '../src/workers/alertEvaluation.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';

const t = useTestDatabase();

async function insertRule(trigger: AlertTrigger, threshold: number, windowSeconds = 300) {
  return t.db.alertRule.create({
    data: { name: trigger, trigger, threshold, windowSeconds, targetUrl: 'https://hooks.example.com/alerts', signingSecret: 'a-very-long-secret-value' },
  });
}

async function letTimePass(seconds: number) {
  await t.db.$executeRaw`update alert_throttles set last_raised_at = last_raised_at - ${seconds}::int * interval '1 second'`;
}

const pending = (n: number, overrides = {}) => Promise.all(Array.from({ length: n }, () => insertDeadLetter(t.db, overrides)));
const exhausted = async (n: number) => {
  const rows = await pending(n);
  await t.db.deadLetter.updateMany({ where: { id: { in: rows.map((r) => r.id) } }, data: { status: 'EXHAUSTED', nextAttemptAt: null } });
};

// Each case: the rule's threshold, a way to put the figure exactly at it, and one more.
const cases: [AlertTrigger, number, () => Promise<unknown>, () => Promise<unknown>][] = [
  ['BACKLOG', 3, () => pending(3), () => pending(1)],
  ['EXHAUSTED_RATE', 2, () => exhausted(2), () => exhausted(1)],
  [
    'OLDEST_PENDING_AGE', 600,
    () => pending(1, { nextAttemptAt: new Date(Date.now() - 300_000) }),
    () => pending(1, { nextAttemptAt: new Date(Date.now() - 3_600_000) }),
  ],
];

describe.each(cases)('%s', (trigger, threshold, atThreshold, aboveThreshold) => {
  it('fires once when the figure passes the threshold, not again inside the window, and again after it', async () => {
    const rule = await insertRule(trigger, threshold);
    await atThreshold();
    const atIt = await evaluateAlertRules(t.db);
    await aboveThreshold();
    const above = await evaluateAlertRules(t.db);
    const insideWindow = await evaluateAlertRules(t.db);
    await letTimePass(301);
    const afterWindow = await evaluateAlertRules(t.db);

    expect([atIt.raised.length, above.raised.length, insideWindow.raised.length, afterWindow.raised.length]).toEqual([0, 1, 0, 1]);
    const alerts = await t.db.alert.findMany({ orderBy: { id: 'asc' } });
    expect(alerts.map((a) => [a.ruleId, a.trigger, a.subject])).toEqual([[rule.id, trigger, 'global'], [rule.id, trigger, 'global']]);
    expect(alerts[0]!.details).toMatchObject({ threshold });
    expect((alerts[0]!.details as { value: number }).value).toBeGreaterThan(threshold);
  });
});

describe('evaluating', () => {
  it('raises once when two instances evaluate at the same moment', async () => {
    await insertRule('BACKLOG', 0);
    await pending(1);

    const [a, b] = await Promise.all([evaluateAlertRules(t.db), evaluateAlertRules(t.db)]);

    expect(a.raised.length + b.raised.length).toBe(1);
    expect(await t.db.alert.count()).toBe(1);
  });

  it('judges each rule by its own threshold and skips disabled rules', async () => {
    const low = await insertRule('BACKLOG', 1);
    await t.db.alertRule.create({ data: { name: 'high', trigger: 'BACKLOG', threshold: 100, targetUrl: 'https://hooks.example.com/a', signingSecret: 'a-very-long-secret-value' } });
    await t.db.alertRule.create({ data: { name: 'off', trigger: 'BACKLOG', threshold: 0, enabled: false, targetUrl: 'https://hooks.example.com/a', signingSecret: 'a-very-long-secret-value' } });
    await pending(2);

    const result = await evaluateAlertRules(t.db);

    expect(result.evaluated).toBe(2);
    expect((await t.db.alert.findMany()).map((a) => a.ruleId)).toEqual([low.id]);
  });
});
