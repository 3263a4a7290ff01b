import { beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute } from './helpers/graphql.ts';
import { tablesDigest, writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
// Rows from the factory are plain SQL inserts, which start their history with RECORDED; these tests read what operators added.
const OPERATOR_ACTIONS = { action: { not: 'RECORDED' as const } };
let server: GraphQLServer;
beforeAll(() => {
  server = writeServer(t.handle);
});

const RESULT = `__typename
  ... on MutationError { code message }
  ... on InvalidTransitionError { ids from to }
  ... on DeadLetterNotFoundError { ids }
  ... on ConflictError { ids }
  ... on ValidationError { field }`;
const REQUEUE = `mutation ($input: RequeueDeadLettersInput!) { requeueDeadLetters(input: $input) { ... on RequeueResult { count ids dryRun } ${RESULT} } }`;
const RESOLVE = `mutation ($input: ResolveDeadLettersInput!) { resolveDeadLetters(input: $input) { ... on BulkChange { count ids dryRun } ${RESULT} } }`;
const DISCARD = `mutation ($input: DiscardDeadLettersInput!) { discardDeadLetters(input: $input) { ... on BulkChange { count ids dryRun } ${RESULT} } }`;
const DELETE = `mutation ($input: DeleteDeadLettersInput!) { deleteDeadLetters(input: $input) { ... on BulkChange { count ids dryRun } ${RESULT} } }`;
const EDIT = `mutation ($input: EditDeadLetterPayloadInput!) { editDeadLetterPayload(input: $input) { ... on DeadLetter { id payload status version } ${RESULT} } }`;
const NOTE = `mutation ($input: AddDeadLetterNoteInput!) { addDeadLetterNote(input: $input) { __typename ... on DeadLetterNote { deadLetterId note actor } ... on MutationError { code message } ... on DeadLetterNotFoundError { ids } ... on ValidationError { field } } }`;

const field = (body: { data?: unknown }) => Object.values(body.data as Record<string, any>)[0];

async function exhausted(overrides = {}) {
  return insertDeadLetter(t.db, { status: 'EXHAUSTED', attempts: 10, ...overrides });
}
async function processing() {
  return insertDeadLetter(t.db, { status: 'PROCESSING', leaseOwner: 'w1', leaseToken: '00000000-0000-0000-0000-000000000001', leaseExpiresAt: new Date(Date.now() + 60_000) });
}

describe('requeueDeadLetters', () => {
  it('requeues explicit ids at a given time, resetting attempts, and records before/after', async () => {
    const a = await exhausted();
    const b = await exhausted();
    const at = '2030-01-01T00:00:00.000Z';
    const { body } = await execute(server, REQUEUE, { input: { ids: [a.id.toString(), b.id.toString()], at, resetAttempts: true, reason: 'downstream fixed' } });
    expect(field(body)).toEqual({ __typename: 'RequeueResult', count: 2, ids: [a.id.toString(), b.id.toString()], dryRun: false });
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => [r.status, r.attempts, r.nextAttemptAt?.toISOString()])).toEqual([['PENDING', 0, at], ['PENDING', 0, at]]);
    const history = await t.db.deadLetterAction.findMany({ where: { deadLetterId: a.id, ...OPERATOR_ACTIONS } });
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ action: 'REQUEUED', actor: 'ops-alice', reason: 'downstream fixed' });
    expect(history[0]!.before).toMatchObject({ status: 'EXHAUSTED', attempts: 10 });
    expect(history[0]!.after).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it('requeues by filter every eligible row and never a PROCESSING or final one', async () => {
    const a = await exhausted({ eventType: 'x' });
    const p = await processing();
    await t.db.deadLetter.update({ where: { id: p.id }, data: { eventType: 'x' } });
    const s = await insertDeadLetter(t.db, { eventType: 'x', status: 'SUCCEEDED' });
    await exhausted({ eventType: 'other' });
    const { body } = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['x'] } } });
    expect(field(body)).toMatchObject({ count: 1, ids: [a.id.toString()] });
    expect((await t.db.deadLetter.findUniqueOrThrow({ where: { id: p.id } })).status).toBe('PROCESSING');
    expect((await t.db.deadLetter.findUniqueOrThrow({ where: { id: s.id } })).status).toBe('SUCCEEDED');
  });

  it('dry runs by filter and by ids report what would change and write nothing', async () => {
    const rows = [await exhausted(), await exhausted(), await processing()];
    const before = await tablesDigest(t.handle);
    const byFilter = await execute(server, REQUEUE, { input: { filter: { statuses: ['EXHAUSTED', 'PROCESSING'] }, dryRun: true } });
    const byIds = await execute(server, REQUEUE, { input: { ids: [rows[1]!.id.toString()], dryRun: true } });
    expect(field(byFilter.body)).toEqual({ __typename: 'RequeueResult', count: 2, ids: [rows[0]!.id.toString(), rows[1]!.id.toString()], dryRun: true });
    expect(field(byIds.body)).toEqual({ __typename: 'RequeueResult', count: 1, ids: [rows[1]!.id.toString()], dryRun: true });
    expect(await tablesDigest(t.handle)).toBe(before);
  });

  it('requeues a SUCCEEDED event only with force', async () => {
    const s = await insertDeadLetter(t.db, { status: 'SUCCEEDED' });
    const before = await tablesDigest(t.handle);
    const refused = await execute(server, REQUEUE, { input: { ids: [s.id.toString()] } });
    expect(field(refused.body)).toMatchObject({ __typename: 'InvalidTransitionError', code: 'CONFLICT', ids: [s.id.toString()], from: 'SUCCEEDED', to: 'REQUEUE' });
    expect(await tablesDigest(t.handle)).toBe(before);
    const forced = await execute(server, REQUEUE, { input: { ids: [s.id.toString()], force: true } });
    expect(field(forced.body)).toMatchObject({ count: 1 });
    expect((await t.db.deadLetter.findUniqueOrThrow({ where: { id: s.id } })).status).toBe('PENDING');
  });

  it('lets exactly one of two racing operators win; the other gets CONFLICT', async () => {
    for (let round = 0; round < 5; round++) {
      const row = await exhausted();
      const input = { input: { ids: [row.id.toString()], expectedVersions: [row.version], resetAttempts: true } };
      const results = await Promise.all([execute(server, REQUEUE, input), execute(server, REQUEUE, input)]);
      const kinds = results.map((r) => (field(r.body) as { __typename: string }).__typename).sort();
      expect(kinds).toEqual(['ConflictError', 'RequeueResult']);
      expect(await t.db.deadLetterAction.count({ where: { deadLetterId: row.id, ...OPERATOR_ACTIONS } })).toBe(1);
    }
  });
});

describe('resolve, discard and delete', () => {
  it('lets exactly one of two operators resolving the same event at once win; the other gets code CONFLICT', async () => {
    for (let round = 0; round < 5; round++) {
      const row = await exhausted();
      const input = { input: { ids: [row.id.toString()], reason: `round ${round}` } };
      const results = await Promise.all([execute(server, RESOLVE, input), execute(server, RESOLVE, input)]);
      const outcomes = results.map((r) => field(r.body) as { __typename: string; code?: string });
      expect(outcomes.filter((o) => o.__typename === 'BulkChange')).toHaveLength(1);
      expect(outcomes.filter((o) => o.code === 'CONFLICT')).toHaveLength(1);
      expect(await t.db.deadLetterAction.count({ where: { deadLetterId: row.id, ...OPERATOR_ACTIONS } })).toBe(1);
    }
  });

  it('resolves by ids with the principal and reason, and discards by filter', async () => {
    const a = await exhausted();
    const b = await exhausted({ queue: 'junk' });
    const r = await execute(server, RESOLVE, { input: { ids: [a.id.toString()], reason: 'replayed by hand' } });
    const d = await execute(server, DISCARD, { input: { filter: { queues: ['junk'] }, reason: 'test traffic' } });
    expect(field(r.body)).toMatchObject({ count: 1, ids: [a.id.toString()] });
    expect(field(d.body)).toMatchObject({ count: 1, ids: [b.id.toString()] });
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((x) => [x.status, x.resolvedBy, x.resolutionReason, x.resolvedAt !== null])).toEqual([
      ['RESOLVED', 'ops-alice', 'replayed by hand', true],
      ['DISCARDED', 'ops-alice', 'test traffic', true],
    ]);
    const history = await t.db.deadLetterAction.findMany({ where: OPERATOR_ACTIONS, orderBy: { id: 'asc' } });
    expect(history.map((h) => [h.deadLetterId, h.action, h.reason, h.before, h.after])).toEqual([
      [a.id, 'RESOLVED', 'replayed by hand', { status: 'EXHAUSTED' }, { status: 'RESOLVED' }],
      [b.id, 'DISCARDED', 'test traffic', { status: 'EXHAUSTED' }, { status: 'DISCARDED' }],
    ]);
  });

  it('deletes only as admin and keeps the deleted row in history', async () => {
    const a = await exhausted();
    const asOperator = await execute(server, DELETE, { input: { ids: [a.id.toString()] } });
    expect(asOperator.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const admin = writeServer(t.handle, { name: 'root', role: 'admin' });
    const { body } = await execute(admin, DELETE, { input: { ids: [a.id.toString()], reason: 'gdpr' } });
    expect(field(body)).toMatchObject({ count: 1 });
    expect(await t.db.deadLetter.count()).toBe(0);
    const [h] = await t.db.deadLetterAction.findMany({ where: OPERATOR_ACTIONS });
    expect(h).toMatchObject({ action: 'DELETED', actor: 'root', reason: 'gdpr', before: { id: Number(a.id), event_type: 'order.placed', status: 'EXHAUSTED' } });
  });

  describe('refuses bad input with a coded error and writes nothing', () => {
    type Case = [string, () => Promise<{ query: string; input: Record<string, unknown> }>, Record<string, unknown>];
    const cases: Case[] = [
      ['resolving a PROCESSING event', async () => ({ query: RESOLVE, input: { ids: [(await processing()).id.toString()], reason: 'x' } }), { __typename: 'InvalidTransitionError', code: 'CONFLICT', from: 'PROCESSING' }],
      ['requeueing a PROCESSING event', async () => ({ query: REQUEUE, input: { ids: [(await processing()).id.toString()], force: true } }), { __typename: 'InvalidTransitionError', from: 'PROCESSING' }],
      ['an unknown id among known ones', async () => ({ query: REQUEUE, input: { ids: [(await exhausted()).id.toString(), '999999'] } }), { __typename: 'DeadLetterNotFoundError', code: 'NOT_FOUND', ids: ['999999'] }],
      ['an empty reason', async () => ({ query: RESOLVE, input: { ids: [(await exhausted()).id.toString()], reason: '   ' } }), { __typename: 'ValidationError', field: 'reason' }],
      ['an over-long reason', async () => ({ query: DISCARD, input: { ids: [(await exhausted()).id.toString()], reason: 'r'.repeat(2001) } }), { __typename: 'ValidationError', field: 'reason' }],
      ['both ids and filter', async () => ({ query: REQUEUE, input: { ids: ['1'], filter: { statuses: ['EXHAUSTED'] } } }), { __typename: 'ValidationError', code: 'VALIDATION' }],
      ['neither ids nor filter', async () => ({ query: REQUEUE, input: {} }), { __typename: 'ValidationError', field: 'ids' }],
      ['an empty filter', async () => ({ query: REQUEUE, input: { filter: {} } }), { __typename: 'ValidationError', field: 'filter' }],
      ['an id list over the cap', async () => ({ query: REQUEUE, input: { ids: Array.from({ length: 1001 }, (_, i) => String(i + 1)) } }), { __typename: 'ValidationError', field: 'ids' }],
      ['a payload edit over 256 KiB', async () => ({ query: EDIT, input: { id: (await exhausted()).id.toString(), payload: 'x'.repeat(262145) } }), { __typename: 'ValidationError', field: 'payload' }],
      ['a payload edit at a stale version', async () => ({ query: EDIT, input: { id: (await exhausted()).id.toString(), payload: 1, expectedVersion: 7 } }), { __typename: 'ConflictError', code: 'CONFLICT' }],
      ['a note on an unknown event', async () => ({ query: NOTE, input: { id: '424242', note: 'hello' } }), { __typename: 'DeadLetterNotFoundError' }],
      ['an empty note', async () => ({ query: NOTE, input: { id: (await exhausted()).id.toString(), note: '' } }), { __typename: 'ValidationError', field: 'note' }],
    ];
    it.each(cases)('%s', async (_name, setup, expected) => {
      await exhausted();
      const { query, input } = await setup();
      const before = await tablesDigest(t.handle);
      const { body } = await execute(server, query, { input });
      expect(body.errors).toBeUndefined();
      expect(field(body)).toMatchObject(expected);
      expect(await tablesDigest(t.handle)).toBe(before);
    });

    it('a malformed id is BAD_USER_INPUT', async () => {
      const before = await tablesDigest(t.handle);
      const { body } = await execute(server, REQUEUE, { input: { ids: ['abc'] } });
      expect(body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(await tablesDigest(t.handle)).toBe(before);
    });
  });
});

describe('editDeadLetterPayload and addDeadLetterNote', () => {
  it('keeps the previous payload in history, so the edit can be undone', async () => {
    const a = await exhausted({ payload: { sku: 'AB-1', qty: '3' } });
    const edited = await execute(server, EDIT, { input: { id: a.id.toString(), payload: { sku: 'AB-1', qty: 3 }, expectedVersion: a.version, reason: 'qty must be a number' } });
    expect(field(edited.body)).toMatchObject({ payload: { sku: 'AB-1', qty: 3 }, status: 'EXHAUSTED' });
    const [h] = await t.db.deadLetterAction.findMany({ where: OPERATOR_ACTIONS });
    expect(h).toMatchObject({ action: 'PAYLOAD_EDITED', actor: 'ops-alice', reason: 'qty must be a number', before: { payload: { sku: 'AB-1', qty: '3' } }, after: { payload: { sku: 'AB-1', qty: 3 } } });

    const undone = await execute(server, EDIT, { input: { id: a.id.toString(), payload: (h!.before as { payload: unknown }).payload, reason: 'undo' } });
    expect(field(undone.body)).toMatchObject({ payload: { sku: 'AB-1', qty: '3' } });
  });

  it('edit-and-retry makes the event PENDING and due', async () => {
    const a = await exhausted();
    const { body } = await execute(server, EDIT, { input: { id: a.id.toString(), payload: { fixed: true }, requeue: true } });
    expect(field(body)).toMatchObject({ status: 'PENDING', payload: { fixed: true } });
  });

  it('advances version by exactly 1 for an edit, an edit-and-retry and a requeue', async () => {
    const [edited, retried, requeued] = [await exhausted(), await exhausted(), await exhausted()];
    const edit = await execute(server, EDIT, { input: { id: edited.id.toString(), payload: { fixed: true }, expectedVersion: edited.version } });
    expect(field(edit.body)).toMatchObject({ status: 'EXHAUSTED', version: edited.version + 1 });
    const retry = await execute(server, EDIT, { input: { id: retried.id.toString(), payload: { fixed: true }, requeue: true, expectedVersion: retried.version } });
    expect(field(retry.body)).toMatchObject({ status: 'PENDING', version: retried.version + 1 });
    // A client that read the new version can act on it.
    const again = await execute(server, EDIT, { input: { id: retried.id.toString(), payload: { fixed: 2 }, expectedVersion: retried.version + 1 } });
    expect(field(again.body)).toMatchObject({ version: retried.version + 2 });
    await execute(server, REQUEUE, { input: { ids: [requeued.id.toString()], expectedVersions: [requeued.version] } });
    expect((await t.db.deadLetter.findUniqueOrThrow({ where: { id: requeued.id } })).version).toBe(requeued.version + 1);
  });

  it('adds a note with the principal as actor, on any status', async () => {
    const p = await processing();
    const { body } = await execute(server, NOTE, { input: { id: p.id.toString(), note: ' looking into it ' } });
    expect(field(body)).toEqual({ __typename: 'DeadLetterNote', deadLetterId: p.id.toString(), note: 'looking into it', actor: 'ops-alice' });
    const [h] = await t.db.deadLetterAction.findMany({ where: OPERATOR_ACTIONS });
    expect(h).toMatchObject({ action: 'NOTE_ADDED', reason: 'looking into it', actor: 'ops-alice' });
  });
});

describe('compare-and-set inside the statement', () => {
  it('aborts a change by ids whole when a row moved on after it was read, writing nothing', async () => {
    const { requeueDeadLetters } = await import('../src/db/sql/requeueDeadLetters.ts');
    const { isExpectRowsViolation } = await import('../src/db/sql/writeTarget.ts');
    const a = await exhausted();
    const b = await exhausted();
    await t.db.deadLetter.update({ where: { id: b.id }, data: { errorMessage: 'touched by someone else' } });
    const before = await tablesDigest(t.handle);
    const error = await requeueDeadLetters(t.db, {
      target: { kind: 'ids', rows: [{ id: a.id, version: a.version }, { id: b.id, version: b.version }] },
      allowed: ['EXHAUSTED'], at: null, resetAttempts: false, actor: 'x', reason: null, redriveId: null,
    }).catch((e: unknown) => e);
    expect(isExpectRowsViolation(error)).toBe(true);
    expect(await tablesDigest(t.handle)).toBe(before);
  });
});
