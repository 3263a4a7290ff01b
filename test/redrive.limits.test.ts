// Redrive limits: the ramp and guard rules, refused option values (BAD_USER_INPUT, nothing
// written), operator pause/resume with new limits, and the history of every change.
import { pino } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { applyLimitsChange, constantLimits, isGuardTripped, rampRatePerSecond } from '../src/domain/redriveLimits.ts';
import type { GraphQLServer } from '../src/api/server.ts';
import { nextBatch, startRedriveRunner, type RedriveRunner } from '../src/workers/redriveRunner.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';
import { everyTableDigest, writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
let server: GraphQLServer;
const running: RedriveRunner[] = [];
beforeAll(() => {
  server = writeServer(t.handle, undefined, { allowedEventTypes: [], redriveThreshold: 10, redriveRatePerSecond: 100 });
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

const REQUEUE = `mutation ($input: RequeueDeadLettersInput!) {
  requeueDeadLetters(input: $input) { __typename ... on RequeueResult { count dryRun redrive { id } } ... on MutationError { code message } }
}`;
const REDRIVE = `query ($id: ID!) { redrive(id: $id) {
  status ratePerSecond startRatePerSecond maxRatePerSecond rampSeconds pauseWhenFailureRateAbove windowSize pausedBy pausedReason
  currentRatePerSecond guardWindow { outcomes failures failureRate } history { action actor reason before after }
} }`;

async function seed(n: number) {
  await t.handle.pool.query(
    `insert into dead_letters (event_type, status, attempts, next_attempt_at) select 'outage', 'EXHAUSTED', 10, null from generate_series(1, $1::int)`, [n]);
}
const startRedrive = async (redriveLimits: Record<string, unknown>) => {
  const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['outage'] }, redriveLimits } });
  return (body.data as any).requeueDeadLetters.redrive.id as string;
};

describe('redrive limits (pure rules)', () => {
  it('ramps linearly from the start rate to the maximum, then holds the maximum', () => {
    const l = { startRatePerSecond: 10, maxRatePerSecond: 110, rampSeconds: 10 };
    expect([0, 2.5, 5, 10, 60].map((s) => rampRatePerSecond(l, s))).toEqual([10, 35, 60, 110, 110]);
    expect(rampRatePerSecond({ ...l, rampSeconds: 0 }, 0)).toBe(110);
  });

  it('trips the guard only on a full window whose failure share is above the threshold', () => {
    const l = { pauseWhenFailureRateAbove: 0.5, windowSize: 10 };
    expect(isGuardTripped(l, { outcomes: 9, failures: 9, lastAttemptId: 9n })).toBe(false);
    expect(isGuardTripped(l, { outcomes: 10, failures: 5, lastAttemptId: 10n })).toBe(false);
    expect(isGuardTripped(l, { outcomes: 10, failures: 6, lastAttemptId: 10n })).toBe(true);
    expect(isGuardTripped({ ...l, pauseWhenFailureRateAbove: null }, { outcomes: 10, failures: 10, lastAttemptId: 10n })).toBe(false);
  });

  it('keeps absent fields on a change, clears the guard on an explicit null, and refuses a start above the maximum', () => {
    const current = { ...constantLimits(100), pauseWhenFailureRateAbove: 0.2 };
    expect(applyLimitsChange(current, { maxRatePerSecond: 300 })).toMatchObject({ startRatePerSecond: 100, maxRatePerSecond: 300, pauseWhenFailureRateAbove: 0.2 });
    expect(applyLimitsChange(current, { pauseWhenFailureRateAbove: null })).toMatchObject({ pauseWhenFailureRateAbove: null });
    expect(applyLimitsChange(current, { maxRatePerSecond: 50 })).toEqual({ field: 'startRatePerSecond', message: 'must not be above maxRatePerSecond (50)' });
  });
});

describe('redrive limits (API)', () => {
  it.each([
    ['a negative start rate', { startRatePerSecond: -5 }, 'input.redriveLimits.startRatePerSecond'],
    ['a maximum rate of 0', { maxRatePerSecond: 0 }, 'input.redriveLimits.maxRatePerSecond'],
    ['a start rate above the maximum', { startRatePerSecond: 500, maxRatePerSecond: 100 }, 'input.redriveLimits.startRatePerSecond'],
    ['a start rate above the default maximum', { startRatePerSecond: 500 }, 'input.redriveLimits.startRatePerSecond'],
    ['a negative ramp', { rampSeconds: -1 }, 'input.redriveLimits.rampSeconds'],
    ['a guard above 1', { pauseWhenFailureRateAbove: 1.5 }, 'input.redriveLimits.pauseWhenFailureRateAbove'],
    ['a negative guard', { pauseWhenFailureRateAbove: -0.1 }, 'input.redriveLimits.pauseWhenFailureRateAbove'],
    ['a window of 0', { pauseWhenFailureRateAbove: 0.5, windowSize: 0 }, 'input.redriveLimits.windowSize'],
  ])('refuses %s with BAD_USER_INPUT, even on a dry run, and writes nothing', async (_name, redriveLimits, argument) => {
    await seed(12);
    const before = await everyTableDigest(t.handle);
    for (const dryRun of [false, true]) {
      const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['outage'] }, dryRun, redriveLimits } });
      expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument });
    }
    expect(await everyTableDigest(t.handle)).toBe(before);
  });

  it('refuses a rate of 0 and a rate given twice with BAD_USER_INPUT and writes nothing', async () => {
    await seed(12);
    const before = await everyTableDigest(t.handle);
    for (const input of [{ ratePerSecond: 0 }, { ratePerSecond: 10, redriveLimits: { maxRatePerSecond: 20 } }]) {
      const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['outage'] }, ...input } });
      expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument: 'input.ratePerSecond' });
    }
    expect(await everyTableDigest(t.handle)).toBe(before);
  });

  it('starts with its limits, shows them and the ramp’s current rate, and records STARTED', async () => {
    await seed(12);
    const id = await startRedrive({ startRatePerSecond: 5, maxRatePerSecond: 50, rampSeconds: 600, pauseWhenFailureRateAbove: 0.25, windowSize: 40 });
    const r = ((await execute(server, REDRIVE, { id })).body.data as any).redrive;
    expect(r).toMatchObject({
      status: 'RUNNING', ratePerSecond: 50, startRatePerSecond: 5, maxRatePerSecond: 50, rampSeconds: 600, pauseWhenFailureRateAbove: 0.25, windowSize: 40,
      pausedBy: null, guardWindow: { outcomes: 0, failures: 0, failureRate: null },
    });
    expect(r.currentRatePerSecond).toBeGreaterThanOrEqual(5);
    expect(r.currentRatePerSecond).toBeLessThan(10);
    expect(r.history).toEqual([{ action: 'STARTED', actor: 'ops-alice', reason: null, before: null,
      after: { startRatePerSecond: 5, maxRatePerSecond: 50, rampSeconds: 600, pauseWhenFailureRateAbove: 0.25, windowSize: 40, total: 12 } }]);
  });

  it('pauses by an operator with a reason, refuses bad new limits on resume, and resumes with new limits (a null guard removes it)', async () => {
    await seed(12);
    const id = await startRedrive({ maxRatePerSecond: 50, pauseWhenFailureRateAbove: 0.25 });
    const PAUSE = `mutation ($id: ID!) { pauseRedrive(id: $id, reason: "checking the ledger") { __typename ... on Redrive { status pausedBy pausedReason currentRatePerSecond } } }`;
    expect(((await execute(server, PAUSE, { id })).body.data as any).pauseRedrive).toEqual({
      __typename: 'Redrive', status: 'PAUSED', pausedBy: 'OPERATOR', pausedReason: 'checking the ledger', currentRatePerSecond: null,
    });

    const RESUME = `mutation ($id: ID!, $limits: RedriveLimitsInput) { resumeRedrive(id: $id, limits: $limits) {
      __typename ... on Redrive { status pausedBy pausedReason startRatePerSecond maxRatePerSecond rampSeconds pauseWhenFailureRateAbove } } }`;
    const before = await everyTableDigest(t.handle);
    for (const [limits, argument] of [[{ startRatePerSecond: 80 }, 'limits.startRatePerSecond'], [{ windowSize: 20_000 }, 'limits.windowSize']] as const) {
      const { body } = await execute(server, RESUME, { id, limits });
      expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument });
    }
    expect(await everyTableDigest(t.handle)).toBe(before);

    const resumed = (await execute(server, RESUME, { id, limits: { startRatePerSecond: 10, maxRatePerSecond: 80, rampSeconds: 30, pauseWhenFailureRateAbove: null } })).body.data as any;
    expect(resumed.resumeRedrive).toEqual({
      __typename: 'Redrive', status: 'RUNNING', pausedBy: null, pausedReason: null, startRatePerSecond: 10, maxRatePerSecond: 80, rampSeconds: 30, pauseWhenFailureRateAbove: null,
    });
    const history = ((await execute(server, REDRIVE, { id })).body.data as any).redrive.history;
    expect(history.map((h: any) => [h.action, h.actor, h.reason])).toEqual([
      ['STARTED', 'ops-alice', null], ['PAUSED', 'ops-alice', 'checking the ledger'], ['RESUMED', 'ops-alice', null],
    ]);
    expect(history[2].before).toMatchObject({ status: 'PAUSED', maxRatePerSecond: 50, pauseWhenFailureRateAbove: 0.25 });
    expect(history[2].after).toMatchObject({ status: 'RUNNING', startRatePerSecond: 10, maxRatePerSecond: 80, rampSeconds: 30, pauseWhenFailureRateAbove: null });
  });

  it('keeps a guarded redrive at most one window ahead of its deliveries: a batch only tops the window up', async () => {
    await seed(100);
    const id = BigInt(await startRedrive({ startRatePerSecond: 1_000, maxRatePerSecond: 1_000, pauseWhenFailureRateAbove: 0.5, windowSize: 40 }));
    const runner = startRedriveRunner({ db: t.db, logger: pino({ level: 'silent' }), owner: 'g', pollIntervalMs: 20 });
    running.push(runner);
    const batch = await nextBatch(runner, id);
    await runner.stop();
    // The rate allows 1,000 and the batch size 500, but nothing was delivered yet: 40 requeued.
    expect(batch.requeued).toBe(40);
    const r = await t.db.redrive.findUniqueOrThrow({ where: { id } });
    expect(r.requeued).toBe(40);
    expect(await t.db.deadLetter.count({ where: { status: 'PENDING' } })).toBe(40);
  });

  it('leaves every event it has not reached untouched when cancelled mid-way', async () => {
    await seed(30);
    const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['outage'] }, ratePerSecond: 10 } });
    const id = BigInt((body.data as any).requeueDeadLetters.redrive.id);
    const runner = startRedriveRunner({ db: t.db, logger: pino({ level: 'silent' }), owner: 'c', pollIntervalMs: 20 });
    running.push(runner);
    await nextBatch(runner, id);
    await execute(server, `mutation ($id: ID!) { cancelRedrive(id: $id) { __typename } }`, { id: String(id) });
    await runner.stop();
    const r = await t.db.redrive.findUniqueOrThrow({ where: { id } });
    expect(r.status).toBe('CANCELLED');
    expect(await t.db.deadLetter.count({ where: { status: 'PENDING' } })).toBe(r.requeued);
    expect(await t.db.deadLetter.count({ where: { status: 'EXHAUSTED', attempts: 10, id: { gt: r.lastId } } })).toBe(30 - r.processed);
    expect(r.processed).toBeLessThan(30);
  });
});
