import { pino } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { nextTransformBatch, startRedriveRunner, type RedriveRunner } from '../src/workers/redriveRunner.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
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

/** The runner that applies and undoes transforms larger than one batch. */
function startRunner(): RedriveRunner {
  const runner = startRedriveRunner({ db: t.db, logger: pino({ level: 'silent' }), owner: 'runner', pollIntervalMs: 20 });
  running.push(runner);
  return runner;
}

async function untilCompleted(runner: RedriveRunner, id: string): Promise<void> {
  for (;;) if ((await nextTransformBatch(runner, BigInt(id))).completed) return;
}
const TRANSFORM = `query ($id: ID!) { transform(id: $id) { status matched processed progress changed unchanged failed skipped restored keptEdited undoProcessed } }`;

const ERRORS = `__typename ... on MutationError { code message } ... on ValidationError { field }`;
const PREVIEW = `query ($input: PreviewTransformInput!) { previewTransform(input: $input) {
  ... on TransformPreview { matched changed unchanged failed failures { reason count ids } samples { id before after } } ${ERRORS} } }`;
const APPLY = `mutation ($input: ApplyTransformInput!) { applyTransform(input: $input) {
  ... on Transform { id status kind changed unchanged failed matched createdBy requeue }
  ... on TransformNotApplicableError { failed failures { reason count ids } } ${ERRORS} } }`;
const UNDO = `mutation ($input: UndoTransformInput!) { undoTransform(input: $input) {
  ... on UndoTransformResult { restored edited editedIds missing missingIds transform { id status restored keptEdited keptMissing undoneBy } }
  ... on TransformNotFoundError { id } ... on ConflictError { ids } ${ERRORS} } }`;
const EDIT = `mutation ($input: EditDeadLetterPayloadInput!) { editDeadLetterPayload(input: $input) { __typename } }`;

const field = (body: { data?: unknown }) => Object.values(body.data as Record<string, any>)[0];

async function sql<R extends Record<string, unknown>>(text: string, values: unknown[] = []): Promise<R[]> {
  return (await t.handle.pool.query<R>(text, values)).rows;
}

/** id and payload::text of every dead letter, as one string: equal strings mean byte-identical payloads. */
async function payloadsText(): Promise<string> {
  const [row] = await sql<{ s: string }>(`select coalesce(string_agg(id || '=' || payload::text, E'\\n' order by id), '') as s from dead_letters_current`);
  return row!.s;
}

/** Everything a refused transform must leave as it was. */
async function writeState(): Promise<string> {
  const [row] = await sql<{ s: string }>(`select md5(
    coalesce((select string_agg(t::text, '|' order by id) from dead_letters_current t), '') || '#' ||
    coalesce((select string_agg(t::text, '|' order by id) from dead_letter_actions t), '') || '#' ||
    coalesce((select string_agg(t::text, '|' order by id) from transforms t), '')) as s`);
  return row!.s;
}

describe('transform with undo on 10,000 events', () => {
  it('previews exact counts, applies, and undo leaves every payload byte-identical with both in history', async () => {
    // Payloads that a trip through JavaScript would reformat: numeric scale (12.50), exponent, unicode.
    await sql(`insert into dead_letters (event_type, payload, status, error_message)
      select 'bar.t',
             jsonb_build_object('n', i, 'currency', case when i % 3 = 0 then 'EUR' else 'usd' end,
                                'amount', (i || '.50')::numeric, 'big', 1.0e3, 'note', 'ünï ' || i,
                                'nested', jsonb_build_object('a', jsonb_build_array(1, 2.10, null)))
                 || case when i % 7 = 0 then '{"legacy": true}'::jsonb else '{}'::jsonb end,
             case when i % 5 = 0 then 'PENDING' else 'EXHAUSTED' end::"DeadLetterStatus",
             'HTTP 422'
        from generate_series(1, 10000) as i`);
    await insertDeadLetter(t.db, { eventType: 'other', payload: { currency: 'usd' } });
    const start = await payloadsText();
    const filter = { eventTypes: ['bar.t'] };
    const patch = [{ op: 'replace', path: '/currency', value: 'EUR' }];
    const [expected] = await sql<{ changed: number; unchanged: number; legacy: number; total: number }>(`
      select count(*) filter (where payload->>'currency' <> 'EUR')::int as changed,
             count(*) filter (where payload->>'currency' = 'EUR')::int as unchanged,
             count(*) filter (where payload ? 'legacy')::int as legacy,
             count(*)::int as total
        from dead_letters_current where event_type = 'bar.t'`);
    expect(expected!.total).toBe(10_000);

    const preview = field((await execute(server, PREVIEW, { input: { filter, patch, sample: 3 } })).body);
    expect(preview).toMatchObject({ __typename: 'TransformPreview', matched: 10_000, changed: expected!.changed, unchanged: expected!.unchanged, failed: 0, failures: [] });
    expect(preview.samples).toHaveLength(3);
    expect(preview.samples[0]).toMatchObject({ id: '1', before: { n: 1, currency: 'usd' }, after: { n: 1, currency: 'EUR' } });

    // A patch that does not apply to some events: counted exactly, grouped by reason.
    const failing = field((await execute(server, PREVIEW, { input: { filter, patch: [{ op: 'remove', path: '/legacy' }], sample: 0 } })).body);
    expect(failing).toMatchObject({ matched: 10_000, changed: expected!.legacy, unchanged: 0, failed: 10_000 - expected!.legacy });
    expect(failing.failures).toEqual([{ reason: 'operation 0 (remove /legacy): nothing at /legacy', count: 10_000 - expected!.legacy, ids: ['1', '2', '3', '4', '5', '6', '8', '9', '10', '11'] }]);
    expect(await payloadsText()).toBe(start);

    // Larger than one batch: recorded as RUNNING with its 10,000 targets, applied by the runner.
    const applied = field((await execute(server, APPLY, { input: { filter, patch, reason: 'currency fix' } })).body);
    expect(applied).toMatchObject({ __typename: 'Transform', status: 'RUNNING', kind: 'JSON_PATCH', matched: 10_000, changed: 0, createdBy: 'ops-alice' });
    const runner = startRunner();
    await untilCompleted(runner, applied.id);
    expect(field((await execute(server, TRANSFORM, { id: applied.id })).body)).toEqual({
      status: 'APPLIED', matched: 10_000, processed: 10_000, progress: 1, changed: expected!.changed, unchanged: expected!.unchanged, failed: 0, skipped: 0,
      restored: 0, keptEdited: 0, undoProcessed: 0,
    });
    expect((await sql<{ n: number }>('select count(*)::int as n from transform_items'))[0]!.n).toBe(0);
    const [after] = await sql<{ usd: number; other: string }>(`
      select count(*) filter (where payload->>'currency' = 'usd' and event_type = 'bar.t')::int as usd,
             (select payload->>'currency' from dead_letters_current where event_type = 'other') as other from dead_letters_current`);
    expect(after).toEqual({ usd: 0, other: 'usd' });
    const [history] = await sql<{ n: number; distinct_ids: number }>(
      `select count(*)::int as n, count(distinct dead_letter_id)::int as distinct_ids from dead_letter_actions where action = 'PAYLOAD_TRANSFORMED' and transform_id = $1`, [applied.id]);
    expect(history).toEqual({ n: expected!.changed, distinct_ids: expected!.changed });

    const undoDone = untilCompleted(runner, applied.id);
    const undoing = field((await execute(server, UNDO, { input: { id: applied.id, reason: 'wrong currency' } })).body);
    expect(undoing).toMatchObject({ __typename: 'UndoTransformResult', transform: { status: 'UNDOING', undoneBy: 'ops-alice' } });
    await undoDone;
    expect(field((await execute(server, TRANSFORM, { id: applied.id })).body)).toMatchObject({
      status: 'UNDONE', restored: expected!.changed, keptEdited: 0, undoProcessed: expected!.changed,
    });
    expect(await payloadsText()).toBe(start);

    const [both] = await sql<{ transformed: number; undone: number }>(`
      select count(*) filter (where action = 'PAYLOAD_TRANSFORMED')::int as transformed, count(*) filter (where action = 'TRANSFORM_UNDONE')::int as undone
        from dead_letter_actions where transform_id = $1`, [applied.id]);
    expect(both).toEqual({ transformed: expected!.changed, undone: expected!.changed });
    // One event's story over GraphQL shows both, pointing at the transform.
    const story = await execute(server, `{ deadLetter(id: "1") { history { action transformId before after } } }`);
    const entries = (story.body.data as any).deadLetter.history.filter((h: any) => h.transformId !== null);
    expect(entries.map((h: any) => [h.action, h.transformId, h.before.payload.currency, h.after.payload.currency]))
      .toEqual([['PAYLOAD_TRANSFORMED', applied.id, 'usd', 'EUR'], ['TRANSFORM_UNDONE', applied.id, 'EUR', 'usd']]);
  }, 120_000);
});

describe('previewTransform', () => {
  it('counts the matches by status and flags those already SUCCEEDED, RESOLVED or DISCARDED, among them a payload fixed by hand', async () => {
    const fixed = await insertDeadLetter(t.db, { eventType: 'x', status: 'SUCCEEDED', payload: { currency: 'EUR', fixedBy: 'alice' } });
    await insertDeadLetter(t.db, { eventType: 'x', status: 'RESOLVED', payload: { currency: 'usd' } });
    for (let i = 0; i < 2; i++) await insertDeadLetter(t.db, { eventType: 'x', status: 'EXHAUSTED', payload: { currency: 'usd' } });
    await insertDeadLetter(t.db, { eventType: 'x', status: 'PENDING', payload: { currency: 'usd' } });
    const before = await writeState();

    const result = field((await execute(server, `query ($input: PreviewTransformInput!) { previewTransform(input: $input) {
      ... on TransformPreview { matched changed finished byStatus { status count } samples { id status } } ${ERRORS} } }`,
    { input: { filter: { eventTypes: ['x'] }, patch: [{ op: 'add', path: '/currency', value: 'EUR' }], sample: 5 } })).body);

    expect(result).toEqual({
      __typename: 'TransformPreview', matched: 5, changed: 4, finished: 2,
      byStatus: [{ status: 'EXHAUSTED', count: 2 }, { status: 'PENDING', count: 1 }, { status: 'RESOLVED', count: 1 }, { status: 'SUCCEEDED', count: 1 }],
      samples: expect.arrayContaining([{ id: expect.any(String), status: 'RESOLVED' }, { id: expect.any(String), status: 'EXHAUSTED' }]),
    });
    // The hand-fixed payload already says EUR: unchanged, so it is not a sample, but it is counted as finished.
    expect(result.samples.map((x: { id: string }) => x.id)).not.toContain(fixed.id.toString());
    expect(await writeState()).toBe(before);
  });
});

describe('applyTransform', () => {
  it('changes none of the events when the patch fails on some, and reports them', async () => {
    const a = await insertDeadLetter(t.db, { eventType: 'x', payload: { v: 1 } });
    const b = await insertDeadLetter(t.db, { eventType: 'x', payload: { w: 1 } });
    const before = await writeState();
    const result = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['x'] }, patch: [{ op: 'replace', path: '/v', value: 2 }] } })).body);
    expect(result).toMatchObject({
      __typename: 'TransformNotApplicableError', code: 'VALIDATION', failed: 1,
      failures: [{ reason: 'operation 0 (replace /v): nothing at /v', count: 1, ids: [b.id.toString()] }],
    });
    expect(await writeState()).toBe(before);
    expect((await t.db.deadLetter.findUniqueOrThrow({ where: { id: a.id } })).payload).toEqual({ v: 1 });
  });

  it('with skipFailing changes the events the patch applies to and counts the rest', async () => {
    const a = await insertDeadLetter(t.db, { eventType: 'x', payload: { v: 1 } });
    await insertDeadLetter(t.db, { eventType: 'x', payload: { w: 1 } });
    const result = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['x'] }, patch: [{ op: 'replace', path: '/v', value: 2 }], skipFailing: true } })).body);
    expect(result).toMatchObject({ __typename: 'Transform', matched: 2, changed: 1, failed: 1 });
    expect((await t.db.deadLetter.findUniqueOrThrow({ where: { id: a.id } })).payload).toEqual({ v: 2 });
  });

  it('changes nothing when a result would break the payload size or depth CHECK, and says which events', async () => {
    const small = await insertDeadLetter(t.db, { eventType: 'x', payload: { v: 'a' } });
    const large = await insertDeadLetter(t.db, { eventType: 'x', payload: { v: 'b', pad: 'x'.repeat(200_000) } });
    const before = await writeState();
    const big = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['x'] }, mergePatch: { more: 'y'.repeat(70_000) }, skipFailing: true } })).body);
    expect(big).toMatchObject({ __typename: 'TransformNotApplicableError', failed: 1, failures: [{ reason: 'the result would be larger than 262144 bytes (payload size CHECK)', count: 1, ids: [large.id.toString()] }] });
    let deep: unknown = 1;
    for (let i = 0; i < 101; i++) deep = { d: deep };
    const tooDeep = field((await execute(server, APPLY, { input: { filter: { ids: [small.id.toString()] }, patch: [{ op: 'add', path: '/deep', value: deep }] } })).body);
    expect(tooDeep).toMatchObject({ __typename: 'TransformNotApplicableError', failures: [{ reason: 'the result would be nested deeper than 100 levels (payload depth CHECK)', ids: [small.id.toString()] }] });
    expect(await writeState()).toBe(before);
  });

  it('applies a merge patch (null deletes a key) and with requeue makes changed EXHAUSTED events due now', async () => {
    const e = await insertDeadLetter(t.db, { eventType: 'm', status: 'EXHAUSTED', attempts: 10, payload: { keep: 1, drop: 2, inner: { a: 1 } } });
    const s = await insertDeadLetter(t.db, { eventType: 'm', status: 'SUCCEEDED', payload: { keep: 1, inner: { a: 1, b: 2 } } });
    const result = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['m'] }, mergePatch: { drop: null, inner: { b: 2 } }, requeue: true } })).body);
    expect(result).toMatchObject({ __typename: 'Transform', kind: 'MERGE_PATCH', changed: 1, unchanged: 1, requeue: true });
    const row = await t.db.deadLetter.findUniqueOrThrow({ where: { id: e.id } });
    expect(row.payload).toEqual({ keep: 1, inner: { a: 1, b: 2 } });
    expect(row.status).toBe('PENDING');
    expect((await t.db.deadLetter.findUniqueOrThrow({ where: { id: s.id } })).status).toBe('SUCCEEDED');
  });

  it('advances version by exactly 1 on each event it changes, requeued or not', async () => {
    const e = await insertDeadLetter(t.db, { eventType: 'v', status: 'EXHAUSTED', attempts: 10, payload: { a: 1 } });
    const s = await insertDeadLetter(t.db, { eventType: 'v', status: 'SUCCEEDED', payload: { a: 1 } });
    const same = await insertDeadLetter(t.db, { eventType: 'v', status: 'EXHAUSTED', payload: { a: 1, b: 2 } });
    const result = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['v'] }, mergePatch: { b: 2 }, requeue: true } })).body);
    expect(result).toMatchObject({ __typename: 'Transform', changed: 2, unchanged: 1 });
    const rows = await t.db.deadLetter.findMany({ where: { eventType: 'v' }, orderBy: { id: 'asc' } });
    expect(rows.map((r) => [r.id, r.status, r.version])).toEqual([
      [e.id, 'PENDING', e.version + 1],
      [s.id, 'SUCCEEDED', s.version + 1],
      [same.id, 'EXHAUSTED', same.version],
    ]);
  });

  it('never rewrites a number JavaScript cannot carry exactly, and never touches PROCESSING events', async () => {
    const exact = await insertDeadLetter(t.db, { eventType: 'n', payload: { v: 1 } });
    const [big] = await sql<{ id: string }>(`insert into dead_letters (event_type, payload) values ('n', '{"v": 1, "id": 12345678901234567890}') returning id`);
    await insertDeadLetter(t.db, {
      eventType: 'n', status: 'PROCESSING', payload: { v: 1 }, leaseOwner: 'w1', leaseToken: '00000000-0000-0000-0000-000000000001', leaseExpiresAt: new Date(Date.now() + 60_000),
    });
    const preview = field((await execute(server, PREVIEW, { input: { filter: { eventTypes: ['n'] }, patch: [{ op: 'replace', path: '/v', value: 2 }] } })).body);
    expect(preview).toMatchObject({ matched: 2, changed: 1, failed: 1, failures: [{ reason: 'payload holds a number JavaScript cannot carry exactly (at …/id)', ids: [big!.id] }] });
    expect(preview.samples.map((s: any) => s.id)).toEqual([exact.id.toString()]);
  });
});

describe('keys JSON allows but JavaScript objects treat specially', () => {
  // Built with JSON.parse: an object literal's `__proto__` would set the prototype instead of a key.
  const withProto = () => JSON.parse('{"__proto__": {"x": 1}, "y": 2}');
  const protoOf = async (id: bigint, key: string) =>
    (await sql<{ v: string | null }>(`select payload -> $2 -> '__proto__' ->> 'x' as v from dead_letters_current where id = $1`, [id, key]))[0]!.v;

  it('keeps a __proto__ key of an added value in preview and apply, and of a stored value a copy duplicates', async () => {
    const e = await insertDeadLetter(t.db, { eventType: 'p', payload: { v: 1 } });
    const patch = [{ op: 'add', path: '/meta', value: withProto() }];
    const preview = field((await execute(server, PREVIEW, { input: { filter: { eventTypes: ['p'] }, patch } })).body);
    expect(preview).toMatchObject({ matched: 1, changed: 1, failed: 0 });
    expect(JSON.stringify(preview.samples[0].after)).toBe('{"v":1,"meta":{"__proto__":{"x":1},"y":2}}');
    expect(field((await execute(server, APPLY, { input: { filter: { eventTypes: ['p'] }, patch } })).body)).toMatchObject({ __typename: 'Transform', changed: 1 });
    expect(await protoOf(e.id, 'meta')).toBe('1');

    const copied = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['p'] }, patch: [{ op: 'copy', from: '/meta', path: '/copy' }] } })).body);
    expect(copied).toMatchObject({ __typename: 'Transform', changed: 1 });
    expect(await protoOf(e.id, 'copy')).toBe('1');
  });

  it('keeps a __proto__ key through the single-event edit and through a later transform of that event', async () => {
    const e = await insertDeadLetter(t.db, { eventType: 'p', payload: { v: 1 } });
    const payload = JSON.parse('{"meta": {"__proto__": {"x": 1}}, "k": 1}');
    expect(field((await execute(server, EDIT, { input: { id: e.id.toString(), payload } })).body).__typename).toBe('DeadLetter');
    expect(await protoOf(e.id, 'meta')).toBe('1');
    for (const input of [{ patch: [{ op: 'replace', path: '/k', value: 2 }] }, { mergePatch: { k: 3 } }]) {
      expect(field((await execute(server, APPLY, { input: { filter: { eventTypes: ['p'] }, ...input } })).body)).toMatchObject({ __typename: 'Transform', changed: 1 });
      expect(await protoOf(e.id, 'meta')).toBe('1');
    }
  });

  it('finds only a payload\'s own members: /toString and /list/length name nothing', async () => {
    await insertDeadLetter(t.db, { eventType: 'o', payload: { list: [1, 2] } });
    const cases: [unknown[], string][] = [
      [[{ op: 'remove', path: '/toString' }], 'operation 0 (remove /toString): nothing at /toString'],
      [[{ op: 'add', path: '/toString/x', value: 1 }], 'operation 0 (add /toString/x): nothing at /toString/x'],
      [[{ op: 'remove', path: '/list/length' }], 'operation 0 (remove /list/length): nothing at /list/length'],
    ];
    for (const [patch, reason] of cases) {
      const preview = field((await execute(server, PREVIEW, { input: { filter: { eventTypes: ['o'] }, patch } })).body);
      expect(preview).toMatchObject({ matched: 1, changed: 0, unchanged: 0, failed: 1, failures: [{ reason }] });
    }
    expect((Object.prototype.toString as unknown as { x?: unknown }).x).toBeUndefined();
  });
});

describe('undoTransform', () => {
  it('leaves an event edited since the transform and reports it', async () => {
    const a = await insertDeadLetter(t.db, { eventType: 'u', payload: { v: 1 } });
    const b = await insertDeadLetter(t.db, { eventType: 'u', payload: { v: 1 } });
    const applied = field((await execute(server, APPLY, { input: { filter: { eventTypes: ['u'] }, patch: [{ op: 'add', path: '/fixed', value: true }] } })).body);
    expect(applied.changed).toBe(2);
    expect(field((await execute(server, EDIT, { input: { id: b.id.toString(), payload: { v: 9 } } })).body).__typename).toBe('DeadLetter');
    const undone = field((await execute(server, UNDO, { input: { id: applied.id } })).body);
    expect(undone).toMatchObject({ restored: 1, edited: 1, editedIds: [b.id.toString()], missing: 0, transform: { keptEdited: 1 } });
    expect((await t.db.deadLetter.findUniqueOrThrow({ where: { id: a.id } })).payload).toEqual({ v: 1 });
    expect((await t.db.deadLetter.findUniqueOrThrow({ where: { id: b.id } })).payload).toEqual({ v: 9 });
    const again = field((await execute(server, UNDO, { input: { id: applied.id } })).body);
    expect(again).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT', ids: [applied.id] });
  });

  it('answers an unknown transform id with NOT_FOUND', async () => {
    const result = field((await execute(server, UNDO, { input: { id: '999' } })).body);
    expect(result).toMatchObject({ __typename: 'TransformNotFoundError', code: 'NOT_FOUND', id: '999' });
    const read = await execute(server, '{ transform(id: "999") { id } }');
    expect(read.body.data).toEqual({ transform: null });
  });
});

describe('bad input', () => {
  it('refuses an invalid patch document with BAD_USER_INPUT naming the operation index, writing nothing', async () => {
    await insertDeadLetter(t.db, { eventType: 'x' });
    const before = await writeState();
    const cases: [unknown, number | null, RegExp][] = [
      [[{ op: 'add', path: '/a', value: 1 }, { op: 'replace', path: 'a', value: 1 }], 1, /operation 1: "path" must be "" or start with "\/"/],
      [[{ op: 'add', path: '/a', value: 1 }, { op: 'add', path: '/b', value: 1 }, { op: 'frobnicate', path: '/a' }], 2, /operation 2: "op" must be one of/],
      [[{ op: 'add', path: '/a' }], 0, /operation 0: "add" needs a "value"/],
      [[{ op: 'copy', path: '/a' }], 0, /operation 0: "from" must be a JSON Pointer/],
      [[{ op: 'add', path: '/__proto__/x', value: 1 }], 0, /"__proto__", which is not supported/],
      [[{ op: 'add', path: '/a', value: 'x'.repeat(200_000) }, { op: 'test', path: '/a', value: 'x'.repeat(70_000) }], 1,
        /operation 1: the values of operations 0 to 1 hold more than 262144 bytes of JSON, the most one patch may add to a payload/],
      [{ op: 'add' }, null, /must be a list of operations/],
      [[], null, /at least one operation/],
    ];
    for (const [patch, index, message] of cases) {
      const { body } = await execute(server, APPLY, { input: { filter: { eventTypes: ['x'] }, patch } });
      expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'patch', index });
      expect(body.errors?.[0]?.message).toMatch(message);
    }
    const both = await execute(server, PREVIEW, { input: { filter: { eventTypes: ['x'] }, patch: [{ op: 'remove', path: '/a' }], mergePatch: { a: null } } });
    expect(both.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'mergePatch' });
    expect(await writeState()).toBe(before);
  });

  it('refuses an empty filter, as the bulk actions do', async () => {
    await insertDeadLetter(t.db, { eventType: 'x' });
    const before = await writeState();
    for (const op of [APPLY, PREVIEW]) {
      const result = field((await execute(server, op, { input: { filter: {}, mergePatch: { a: 1 } } })).body);
      expect(result).toMatchObject({ __typename: 'ValidationError', code: 'VALIDATION', field: 'filter' });
    }
    expect(await writeState()).toBe(before);
  });
});
