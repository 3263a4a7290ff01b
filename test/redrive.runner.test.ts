import { pino } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { claimRedrive } from '../src/db/sql/claimRedrive.ts';
import { nextBatch, startRedriveRunner, type RedriveRunner } from '../src/workers/redriveRunner.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute } from './helpers/graphql.ts';
import { writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
const logger = pino({ level: 'silent' });
let server: GraphQLServer;
const running: RedriveRunner[] = [];
beforeAll(() => {
  server = writeServer(t.handle, undefined, { allowedEventTypes: [], redriveThreshold: 10, redriveRatePerSecond: 5 });
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});
const start = (owner: string, leaseSeconds = 30) => {
  const runner = startRedriveRunner({ db: t.db, logger, owner, pollIntervalMs: 20, leaseSeconds });
  running.push(runner);
  return runner;
};

const REQUEUE = `mutation ($input: RequeueDeadLettersInput!) {
  requeueDeadLetters(input: $input) { __typename ... on RequeueResult { count ids redrive { id status total processed } } }
}`;
const REDRIVE = `query ($id: ID!) { redrive(id: $id) { status total processed requeued skipped progress createdBy } }`;

async function seed(n: number) {
  for (let i = 0; i < n; i++) await insertDeadLetter(t.db, { status: 'EXHAUSTED', eventType: 'outage', attempts: 10 });
}

describe('throttled redrive', () => {
  it('turns a requeue by filter above the threshold into a RUNNING redrive and touches nothing yet', async () => {
    await seed(12);
    await insertDeadLetter(t.db, { status: 'SUCCEEDED', eventType: 'outage' });
    const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ["outage"] }, resetAttempts: true } });
    expect((body.data as any).requeueDeadLetters).toEqual({
      __typename: 'RequeueResult', count: 12, ids: [], redrive: { id: '1', status: 'RUNNING', total: 12, processed: 0 },
    });
    expect(await t.db.deadLetter.count({ where: { status: 'EXHAUSTED' } })).toBe(12);
  });

  it('requeues below the threshold at once', async () => {
    await seed(3);
    const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['outage'] } } });
    expect((body.data as any).requeueDeadLetters).toMatchObject({ count: 3, redrive: null });
  });

  it('is interrupted by a restart and resumes without requeueing anything twice', async () => {
    await seed(23);
    const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['outage'] }, ratePerSecond: 10, resetAttempts: true, reason: 'inventory back up' } });
    const id = (body.data as any).requeueDeadLetters.redrive.id as string;

    const first = start('process-a', 1);
    expect(await nextBatch(first, BigInt(id))).toMatchObject({ scanned: 10, requeued: 10, completed: false });
    await first.stop();
    const midway = (await execute(server, REDRIVE, { id })).body.data as any;
    expect(midway.redrive).toMatchObject({ status: 'RUNNING', total: 23, processed: 10, requeued: 10 });

    // One row is claimed by a worker meanwhile: the redrive must skip it, not steal it.
    const busy = await t.db.deadLetter.findFirstOrThrow({ where: { status: 'EXHAUSTED' }, orderBy: { id: 'desc' } });
    await t.db.deadLetter.update({ where: { id: busy.id }, data: { status: 'PROCESSING', leaseOwner: 'w', leaseToken: '00000000-0000-0000-0000-000000000001', leaseExpiresAt: new Date(Date.now() + 60_000) } });
    // The first process "crashed" holding the lease; the second takes over once it expires.
    await t.handle.pool.query(`update redrives set lease_expires_at = now() - interval '1 second'`);

    const second = start('process-b');
    for (;;) if ((await nextBatch(second, BigInt(id))).completed) break;

    const done = (await execute(server, REDRIVE, { id })).body.data as any;
    expect(done.redrive).toEqual({ status: 'COMPLETED', total: 23, processed: 23, requeued: 22, skipped: 1, progress: 1, createdBy: 'ops-alice' });
    const perRow = await t.handle.pool.query<{ n: number }>(
      `select count(*)::int as n from dead_letter_actions where action = 'REQUEUED' and redrive_id = $1 group by dead_letter_id having count(*) > 1`, [id]);
    expect(perRow.rows).toEqual([]);
    expect(await t.db.deadLetterAction.count({ where: { action: 'REQUEUED', redriveId: BigInt(id), reason: 'inventory back up', actor: 'ops-alice' } })).toBe(22);
    expect(await t.db.deadLetter.count({ where: { status: 'PENDING', attempts: 0 } })).toBe(22);
    const sample = await t.db.deadLetterAction.findFirstOrThrow({ where: { redriveId: BigInt(id) } });
    expect(sample.before).toMatchObject({ status: 'EXHAUSTED', attempts: 10 });
    expect(sample.after).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it('never runs one redrive in two runners at once', async () => {
    await seed(30);
    const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['outage'] }, ratePerSecond: 100000 } });
    const id = BigInt((body.data as any).requeueDeadLetters.redrive.id);
    const a = start('a');
    const b = start('b');
    const completed = await Promise.race([a, b].map(async (r) => { for (;;) if ((await nextBatch(r, id)).completed) return r.owner; }));
    expect(['a', 'b']).toContain(completed);
    const rows = await t.handle.pool.query(`select dead_letter_id from dead_letter_actions where redrive_id = $1 group by 1 having count(*) > 1`, [id.toString()]);
    expect(rows.rows).toEqual([]);
    expect(await t.db.deadLetterAction.count({ where: { redriveId: id } })).toBe(30);
  });

  it('stops as FAILED with the error when batches keep failing, and resumes to completion once fixed', async () => {
    await seed(12);
    // A trigger of the user's that rejects the requeue: not database trouble, so it must not be retried forever.
    await t.handle.pool.query(`
      create function reject_outage_requeue() returns trigger language plpgsql as $$
      begin raise exception 'outage events are frozen'; end $$;
      create trigger reject_outage_requeue before update on dead_letter_states
        for each row when (new.event_type = 'outage' and new.status = 'PENDING') execute function reject_outage_requeue()`);
    try {
      const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['outage'] }, ratePerSecond: 100000 } });
      const id = (body.data as any).requeueDeadLetters.redrive.id as string;
      const runner = startRedriveRunner({ db: t.db, logger, owner: 'f', pollIntervalMs: 5, maxBatchFailures: 3 });
      running.push(runner);
      await expect.poll(async () => ((await execute(server, REDRIVE, { id })).body.data as any).redrive.status, { timeout: 10_000 }).toBe('FAILED');
      const failed = await t.db.redrive.findUniqueOrThrow({ where: { id: BigInt(id) } });
      expect(failed).toMatchObject({ processed: 0, requeued: 0, leaseOwner: null });
      expect(failed.error).toContain('outage events are frozen');
      expect(failed.finishedAt).toBeInstanceOf(Date);
      expect(await t.db.deadLetter.count({ where: { status: 'EXHAUSTED' } })).toBe(12);

      await t.handle.pool.query('drop trigger reject_outage_requeue on dead_letter_states');
      const resumed = await execute(server, `mutation ($id: ID!) { resumeRedrive(id: $id) { __typename ... on Redrive { status error } } }`, { id });
      expect((resumed.body.data as any).resumeRedrive).toEqual({ __typename: 'Redrive', status: 'RUNNING', error: null });
      for (;;) if ((await nextBatch(runner, BigInt(id))).completed) break;
      expect(((await execute(server, REDRIVE, { id })).body.data as any).redrive).toMatchObject({ status: 'COMPLETED', requeued: 12 });
    } finally {
      await t.handle.pool.query('drop trigger if exists reject_outage_requeue on dead_letter_states; drop function reject_outage_requeue()');
    }
  });

  it('pauses, resumes and cancels, refusing illegal moves', async () => {
    await seed(12);
    const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['outage'] } } });
    const id = (body.data as any).requeueDeadLetters.redrive.id;
    const moveQuery = (name: string) => `mutation ($id: ID!) { ${name}(id: $id) { __typename ... on Redrive { status } ... on MutationError { code } } }`;
    const moveTo = async (name: string) => ((await execute(server, moveQuery(name), { id })).body.data as any)[name];
    expect(await moveTo('pauseRedrive')).toEqual({ __typename: 'Redrive', status: 'PAUSED' });
    expect(await moveTo('pauseRedrive')).toEqual({ __typename: 'InvalidTransitionError', code: 'CONFLICT' });
    expect(await moveTo('resumeRedrive')).toEqual({ __typename: 'Redrive', status: 'RUNNING' });
    expect(await moveTo('cancelRedrive')).toEqual({ __typename: 'Redrive', status: 'CANCELLED' });
    expect(await moveTo('resumeRedrive')).toEqual({ __typename: 'InvalidTransitionError', code: 'CONFLICT' });
    const missing = (await execute(server, moveQuery('cancelRedrive'), { id: '999' })).body.data as any;
    expect(missing.cancelRedrive).toEqual({ __typename: 'RedriveNotFoundError', code: 'NOT_FOUND' });

    expect(await claimRedrive(t.db, { owner: 'c', leaseSeconds: 30 })).toBeNull();
    expect(await t.db.deadLetter.count({ where: { status: 'PENDING' } })).toBe(0);
  });
});
