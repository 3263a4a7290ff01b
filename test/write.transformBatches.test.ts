// Transforms larger than one batch: applied by the runner in committed batches, resumable after the
// runner stops (or its process dies) holding the lease, never patching a member twice, and never
// overwriting a member edited after the transform was recorded.
import { pino } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { ABANDONED_TRANSFORM_ERROR, claimTransform } from '../src/db/sql/claimTransform.ts';
import { insertTransform } from '../src/db/sql/insertTransform.ts';
import { runTransformBatch, TRANSFORM_BATCH } from '../src/domain/transformBatches.ts';
import { nextTransformBatch, startRedriveRunner, type RedriveRunner } from '../src/workers/redriveRunner.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';
import { writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
let server: GraphQLServer;
beforeAll(() => {
  server = writeServer(t.handle);
});
const running: RedriveRunner[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});
const start = (owner: string, leaseSeconds = 30) => {
  const runner = startRedriveRunner({ db: t.db, logger: pino({ level: 'silent' }), owner, pollIntervalMs: 20, leaseSeconds });
  running.push(runner);
  return runner;
};
async function untilCompleted(runner: RedriveRunner, id: string): Promise<void> {
  for (;;) if ((await nextTransformBatch(runner, BigInt(id))).completed) return;
}

const APPLY = `mutation ($input: ApplyTransformInput!) { applyTransform(input: $input) {
  __typename ... on Transform { id status matched processed } ... on MutationError { code message } } }`;
const UNDO = `mutation ($input: UndoTransformInput!) { undoTransform(input: $input) {
  __typename ... on UndoTransformResult { transform { status } } ... on MutationError { code message } } }`;
const EDIT = `mutation ($input: EditDeadLetterPayloadInput!) { editDeadLetterPayload(input: $input) { __typename } }`;
const TRANSFORM = `query ($id: ID!) { transform(id: $id) {
  status matched processed changed unchanged failed failures { reason count ids } skipped skippedIds restored keptEdited keptEditedIds error } }`;
const field = (body: { data?: unknown }) => Object.values(body.data as Record<string, any>)[0];
const sql = async <R extends Record<string, unknown>>(text: string, values: unknown[] = []) => (await t.handle.pool.query<R>(text, values)).rows;

/** `n` events whose payload has a `tags` array: appending to it is not idempotent, so a member patched twice shows. */
async function seed(n: number, eventType = 'tagged'): Promise<void> {
  await sql(`insert into dead_letters (event_type, payload, status, error_message)
             select $1, jsonb_build_object('n', i, 'tags', jsonb_build_array('a')), 'EXHAUSTED', 'HTTP 422' from generate_series(1, $2::int) i`, [eventType, n]);
}
const APPEND = [{ op: 'add', path: '/tags/-', value: 'fixed' }];

describe('a transform larger than one batch', () => {
  it('is RUNNING when the mutation returns and writes nothing before the runner takes it', async () => {
    await seed(TRANSFORM_BATCH + 1);
    const applied = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['tagged'] }, patch: APPEND } })).body);
    expect(applied).toEqual({ __typename: 'Transform', id: applied.id, status: 'RUNNING', matched: TRANSFORM_BATCH + 1, processed: 0 });
    expect(await sql(`select count(*)::int as n from dead_letter_actions where transform_id is not null`)).toEqual([{ n: 0 }]);
    expect(await sql(`select count(*)::int as n from transform_items`)).toEqual([{ n: TRANSFORM_BATCH + 1 }]);
  });

  it('resumes after its runner stops holding the lease, patching every member exactly once', async () => {
    await seed(2_300);
    const applied = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['tagged'] }, patch: APPEND, reason: 'tag them' } })).body);
    const first = start('process-a', 1);
    expect(await nextTransformBatch(first, BigInt(applied.id))).toMatchObject({ phase: 'APPLY', scanned: TRANSFORM_BATCH, written: TRANSFORM_BATCH, completed: false });
    await first.stop();
    const midway = field((await execute(server, TRANSFORM, { id: applied.id })).body);
    expect(midway).toMatchObject({ status: 'RUNNING', matched: 2_300 });
    expect(midway.processed).toBeGreaterThanOrEqual(TRANSFORM_BATCH);
    expect(midway.processed).toBeLessThan(2_300);
    // A second runner cannot take it while the first one's lease holds, and continues once it lapsed.
    expect(await runTransformBatch(t.db, { id: BigInt(applied.id), owner: 'process-b', leaseSeconds: 30 })).toMatchObject({ held: false });
    await t.handle.pool.query(`update transforms set lease_expires_at = now() - interval '1 second'`);
    const second = start('process-b');
    await untilCompleted(second, applied.id);

    expect(field((await execute(server, TRANSFORM, { id: applied.id })).body)).toMatchObject({
      status: 'APPLIED', matched: 2_300, processed: 2_300, changed: 2_300, skipped: 0, failed: 0,
    });
    expect(await sql(`select payload->'tags' as tags, count(*)::int as n from dead_letters group by 1`)).toEqual([{ tags: ['a', 'fixed'], n: 2_300 }]);
    expect(await sql(`select count(*)::int as n, count(distinct dead_letter_id)::int as distinct_ids from dead_letter_actions
                       where transform_id = $1 and action = 'PAYLOAD_TRANSFORMED' and actor = 'ops-alice' and reason = 'tag them'`, [applied.id]))
      .toEqual([{ n: 2_300, distinct_ids: 2_300 }]);
  });

  it('skips and reports members edited, claimed or deleted after it was recorded, and never overwrites them', async () => {
    await seed(1_200);
    const applied = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['tagged'] }, patch: APPEND } })).body);
    expect(applied.status).toBe('RUNNING');
    // Between the validation and their batch: one edited by an operator, one claimed by a worker, one deleted.
    expect(field((await execute(server, EDIT, { input: { id: '700', payload: { n: 700, tags: [], edited: true } } })).body).__typename).toBe('DeadLetter');
    await sql(`update dead_letters_current set status = 'PROCESSING', lease_owner = 'w', lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute' where id = 900`);
    await sql(`delete from dead_letters where id = 1100`);
    await untilCompleted(start('runner'), applied.id);

    expect(field((await execute(server, TRANSFORM, { id: applied.id })).body)).toMatchObject({
      status: 'APPLIED', matched: 1_200, processed: 1_200, changed: 1_197, skipped: 3, skippedIds: ['700', '900', '1100'], failed: 0,
    });
    expect(await sql(`select id::int, payload from dead_letters where id in (700, 900) order by id`)).toEqual([
      { id: 700, payload: { n: 700, tags: [], edited: true } },
      { id: 900, payload: { n: 900, tags: ['a'] } },
    ]);
    expect(await sql(`select count(*)::int as n from dead_letter_actions where transform_id = $1 and dead_letter_id in (700, 900, 1100)`, [applied.id])).toEqual([{ n: 0 }]);
  });

  it('stops when undone while RUNNING and restores exactly what it applied', async () => {
    await seed(1_600);
    const before = await sql<{ s: string }>(`select string_agg(id || '=' || payload::text, ',' order by id) as s from dead_letters`);
    const applied = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['tagged'] }, patch: APPEND } })).body);
    // One batch, as a runner that then died would have committed it.
    expect(await claimTransform(t.db, { owner: 'runner', leaseSeconds: 30 })).toEqual({ id: BigInt(applied.id) });
    expect(await runTransformBatch(t.db, { id: BigInt(applied.id), owner: 'runner', leaseSeconds: 30 })).toMatchObject({ held: true, written: TRANSFORM_BATCH });
    // 500 changed so far: the undo fits one batch, so the request itself finishes it.
    const undone = field((await execute(server, UNDO, { input: { id: applied.id } })).body);
    expect(undone.transform.status).toBe('UNDONE');
    const done = field((await execute(server, TRANSFORM, { id: applied.id })).body);
    expect(done).toMatchObject({ status: 'UNDONE', processed: TRANSFORM_BATCH, changed: TRANSFORM_BATCH, restored: TRANSFORM_BATCH, keptEdited: 0 });
    expect(await sql(`select string_agg(id || '=' || payload::text, ',' order by id) as s from dead_letters`)).toEqual(before);
    // The apply never resumes: its items are left, but nothing claims an UNDONE transform.
    expect(await claimTransform(t.db, { owner: 'later', leaseSeconds: 30 })).toBeNull();
    expect(await runTransformBatch(t.db, { id: BigInt(applied.id), owner: 'runner', leaseSeconds: 30 })).toMatchObject({ held: false });
  });

  it('is FAILED with the error when its batches keep failing, and can then be undone', async () => {
    await seed(1_000);
    const applied = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['tagged'] }, patch: APPEND } })).body);
    // A trigger of the user's that refuses the second half: not database trouble, so it must not be retried forever.
    await t.handle.pool.query(`
      create function reject_late_tags() returns trigger language plpgsql as $$
      begin raise exception 'tags are frozen from 600 on'; end $$;
      create trigger reject_late_tags before update on dead_letters for each row when (new.id >= 600 and new.payload <> old.payload) execute function reject_late_tags()`);
    try {
      const runner = startRedriveRunner({ db: t.db, logger: pino({ level: 'silent' }), owner: 'f', pollIntervalMs: 5, maxBatchFailures: 3 });
      running.push(runner);
      await expect.poll(async () => field((await execute(server, TRANSFORM, { id: applied.id })).body).status, { timeout: 20_000 }).toBe('FAILED');
      const failed = field((await execute(server, TRANSFORM, { id: applied.id })).body);
      expect(failed).toMatchObject({ processed: TRANSFORM_BATCH, changed: TRANSFORM_BATCH });
      expect(failed.error).toContain('tags are frozen from 600 on');
      await t.handle.pool.query('drop trigger reject_late_tags on dead_letters');
      expect(field((await execute(server, UNDO, { input: { id: applied.id } })).body).transform.status).toBe('UNDONE');
      expect(await sql(`select payload->'tags' as tags, count(*)::int as n from dead_letters group by 1`)).toEqual([{ tags: ['a'], n: 1_000 }]);
    } finally {
      await t.handle.pool.query('drop trigger if exists reject_late_tags on dead_letters; drop function reject_late_tags()');
    }
  });

  it('is FAILED, having changed nothing, when the request recording its events died', async () => {
    await seed(3);
    const id = await insertTransform(t.db, {
      kind: 'MERGE_PATCH', patchJson: '{"a": 1}', filterJson: '{}', requeue: false, skipFailing: false, reason: null, actor: 'ops', matched: 3,
      owner: 'api-dead', leaseSeconds: 30,
    });
    expect(await claimTransform(t.db, { owner: 'runner', leaseSeconds: 30 })).toBeNull();
    expect((await t.db.transform.findUniqueOrThrow({ where: { id } })).status).toBe('PREPARING');
    await t.handle.pool.query(`update transforms set lease_expires_at = now() - interval '1 second'`);
    expect(await claimTransform(t.db, { owner: 'runner', leaseSeconds: 30 })).toBeNull();
    expect(await t.db.transform.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'FAILED', error: ABANDONED_TRANSFORM_ERROR, leaseOwner: null, processed: 0 });
    expect(await sql(`select count(*)::int as n from dead_letters where payload ? 'a'`)).toEqual([{ n: 0 }]);
  });
});
