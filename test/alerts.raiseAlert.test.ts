// raiseAlert: the entry point the error groups (NEW_GROUP, REGRESSION) and the redrive guard
// (REDRIVE_PAUSED) raise through, in their own transaction, throttled per rule, subject and window.
import { describe, expect, it } from 'vitest';
import { raiseAlert } from '../src/domain/alerts.ts';
import { ValidationError } from '../src/domain/errors.ts';
import type { AlertTrigger } from '../src/generated/prisma/enums.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();

async function insertRule(trigger: AlertTrigger, overrides: Record<string, unknown> = {}) {
  return t.db.alertRule.create({
    data: { name: `${trigger} ${Math.random()}`, trigger, targetUrl: 'https://hooks.example.com/alerts', signingSecret: 'a-very-long-secret-value', ...overrides },
  });
}

/** Moves every throttle mark back in time, as if `seconds` had passed. */
async function letTimePass(seconds: number) {
  await t.db.$executeRaw`update alert_throttles set last_raised_at = last_raised_at - ${seconds}::int * interval '1 second'`;
}

const alertRows = () => t.db.alert.findMany({ orderBy: { id: 'asc' }, select: { ruleId: true, trigger: true, subject: true, summary: true, details: true, deliveryStatus: true } });

describe.each([
  ['NEW_GROUP', 'group'],
  ['REGRESSION', 'group'],
  ['REDRIVE_PAUSED', 'redrive'],
] as const)('raiseAlert(%s)', (trigger, kind) => {
  it('raises once per subject within the window, again for another subject, and again after the window', async () => {
    const rule = await insertRule(trigger, { windowSeconds: 600 });
    const raise = (subjectId: number, summary = `${trigger} on ${subjectId}`) =>
      raiseAlert(t.db, { trigger, subjectId, summary, details: { subjectId } });

    const first = await raise(17);
    const again = await raise(17, 'the same subject again');
    const other = await raise(18);
    await letTimePass(599);
    const stillInside = await raise(17);
    await letTimePass(2);
    const afterWindow = await raise(17, 'after the window');

    expect([first.length, again.length, other.length, stillInside.length, afterWindow.length]).toEqual([1, 0, 1, 0, 1]);
    expect(await alertRows()).toEqual([
      { ruleId: rule.id, trigger, subject: `${kind}:17`, summary: `${trigger} on 17`, details: { subjectId: 17 }, deliveryStatus: 'PENDING' },
      { ruleId: rule.id, trigger, subject: `${kind}:18`, summary: `${trigger} on 18`, details: { subjectId: 18 }, deliveryStatus: 'PENDING' },
      { ruleId: rule.id, trigger, subject: `${kind}:17`, summary: 'after the window', details: { subjectId: 17 }, deliveryStatus: 'PENDING' },
    ]);
  });
});

describe('raiseAlert', () => {
  it('raises one alert per enabled rule of the trigger, and none for disabled rules or other triggers', async () => {
    const a = await insertRule('REGRESSION');
    const b = await insertRule('REGRESSION');
    await insertRule('REGRESSION', { enabled: false });
    await insertRule('NEW_GROUP');
    await insertRule('BACKLOG', { threshold: 1 });

    const ids = await raiseAlert(t.db, { trigger: 'REGRESSION', subjectId: 5n, summary: 'group 5 regressed' });

    expect(ids).toHaveLength(2);
    expect((await alertRows()).map((r) => r.ruleId)).toEqual([a.id, b.id]);
  });

  it('raises nothing, and needs no rule, when no rule watches the trigger', async () => {
    expect(await raiseAlert(t.db, { trigger: 'NEW_GROUP', subjectId: '1', summary: 'new group' })).toEqual([]);
    expect(await t.db.alert.count()).toBe(0);
  });

  it('writes in the caller’s transaction: a rollback leaves neither the alert nor its throttle mark', async () => {
    await insertRule('NEW_GROUP');
    await expect(t.db.$transaction(async (tx) => {
      expect(await raiseAlert(tx, { trigger: 'NEW_GROUP', subjectId: 9, summary: 'new group 9' })).toHaveLength(1);
      throw new Error('the caller fails after raising');
    })).rejects.toThrow('the caller fails after raising');

    expect([await t.db.alert.count(), await t.db.alertThrottle.count()]).toEqual([0, 0]);
    expect(await raiseAlert(t.db, { trigger: 'NEW_GROUP', subjectId: 9, summary: 'new group 9' })).toHaveLength(1);
  });

  it('raises once when two transactions raise the same subject at the same time', async () => {
    await insertRule('REDRIVE_PAUSED');
    const firstHolds = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const first = t.db.$transaction(async (tx) => {
      const ids = await raiseAlert(tx, { trigger: 'REDRIVE_PAUSED', subjectId: 3, summary: 'first' });
      firstHolds.resolve();
      await release.promise;
      return ids;
    });
    await firstHolds.promise;
    // The second waits on the first's throttle row until it commits, then finds the window closed.
    const second = t.db.$transaction((tx) => raiseAlert(tx, { trigger: 'REDRIVE_PAUSED', subjectId: 3, summary: 'second' }));
    await waitForLockWait();
    release.resolve();

    expect([(await first).length, (await second).length]).toEqual([1, 0]);
    expect((await alertRows()).map((r) => r.summary)).toEqual(['first']);
  });

  it.each([
    [{ trigger: 'BACKLOG', subjectId: 1, summary: 's' }, 'trigger'],
    [{ trigger: 'NEW_GROUP', subjectId: 0, summary: 's' }, 'subjectId'],
    [{ trigger: 'NEW_GROUP', subjectId: -4, summary: 's' }, 'subjectId'],
    [{ trigger: 'NEW_GROUP', subjectId: 'abc', summary: 's' }, 'subjectId'],
    [{ trigger: 'NEW_GROUP', subjectId: '9223372036854775808', summary: 's' }, 'subjectId'],
    [{ trigger: 'NEW_GROUP', subjectId: 1, summary: '  ' }, 'summary'],
    [{ trigger: 'NEW_GROUP', subjectId: 1, summary: 's', details: [1, 2] }, 'details'],
    [{ trigger: 'NEW_GROUP', subjectId: 1, summary: 's', details: { big: 'x'.repeat(17_000) } }, 'details'],
  ])('refuses %j with a ValidationError on %s and writes nothing', async (input, field) => {
    await insertRule('NEW_GROUP');
    const error = await raiseAlert(t.db, input as never).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe(field);
    expect([await t.db.alert.count(), await t.db.alertThrottle.count()]).toEqual([0, 0]);
  });
});

/** Resolves once some session of this database waits on a row lock. */
async function waitForLockWait() {
  for (;;) {
    const [row] = await t.db.$queryRaw<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
    if (row!.n > 0) return;
    await new Promise((r) => setImmediate(r));
  }
}
