import { beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';
import { tablesDigest, writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
let server: GraphQLServer;
beforeAll(() => {
  server = writeServer(t.handle);
});

const RECORD_MANY = `mutation ($inputs: [RecordDeadLetterInput!]!) {
  recordDeadLetters(inputs: $inputs) {
    __typename
    ... on RecordedDeadLetters { createdCount duplicateCount results { id created } }
    ... on ValidationError { code field index message }
  }
}`;

const RECORD_ONE = `mutation ($input: RecordDeadLetterInput!) {
  recordDeadLetter(input: $input) {
    __typename
    ... on RecordedDeadLetter { id created deadLetter { eventType queue source status payload headers dedupeKey orderingKey orderingSeq maxAttemptsOverride error { kind message stack } } }
    ... on ValidationError { code field index message }
  }
}`;

describe('recordDeadLetter', () => {
  it('stores every field given and the table defaults for the rest, with a RECORDED history row', async () => {
    const { body } = await execute(server, RECORD_ONE, {
      input: {
        eventType: 'order.placed', payload: { orderId: 1 }, error: { kind: 'TIMEOUT', message: 'timed out', stack: 'at x' },
        source: 'checkout', orderingKey: 'order-1', orderingSeq: '9007199254740993', headers: { topic: 'orders', partition: 3, offset: 42 },
        dedupeKey: 'orders-3-42', maxAttempts: 5,
      },
    });
    expect(body).toEqual({
      data: {
        recordDeadLetter: {
          __typename: 'RecordedDeadLetter', id: '1', created: true,
          deadLetter: {
            eventType: 'order.placed', queue: 'default', source: 'checkout', status: 'PENDING', payload: { orderId: 1 },
            headers: { topic: 'orders', partition: 3, offset: 42 }, dedupeKey: 'orders-3-42', orderingKey: 'order-1',
            orderingSeq: '9007199254740993', maxAttemptsOverride: 5, error: { kind: 'TIMEOUT', message: 'timed out', stack: 'at x' },
          },
        },
      },
    });
    const actions = await t.db.deadLetterAction.findMany();
    expect(actions.map((a) => [a.deadLetterId, a.action, a.actor])).toEqual([[1n, 'RECORDED', 'ops-alice']]);
  });

  it('stores the same failure once and says so the second time', async () => {
    const input = { eventType: 'order.placed', payload: { orderId: 1 }, dedupeKey: 'k-1' };
    const first = await execute(server, RECORD_ONE, { input });
    const second = await execute(server, RECORD_ONE, { input: { ...input, payload: { orderId: 'changed' } } });
    expect((first.body.data as any).recordDeadLetter).toMatchObject({ id: '1', created: true });
    expect((second.body.data as any).recordDeadLetter).toMatchObject({ id: '1', created: false, deadLetter: { payload: { orderId: 1 } } });
    expect(await t.db.deadLetter.count()).toBe(1);
    expect(await t.db.deadLetterAction.count()).toBe(1);
  });
});

describe('recordDeadLetters', () => {
  it('reports created and duplicate per input, in input order, including duplicates within the batch', async () => {
    await execute(server, RECORD_ONE, { input: { eventType: 'a', payload: 1, dedupeKey: 'old' } });
    const { body } = await execute(server, RECORD_MANY, {
      inputs: [
        { eventType: 'a', payload: { n: 1 }, dedupeKey: 'new' },
        { eventType: 'a', payload: { n: 2 }, dedupeKey: 'old' },
        { eventType: 'a', payload: { n: 3 } },
        { eventType: 'a', payload: { n: 4 }, dedupeKey: 'new' },
      ],
    });
    const result = (body.data as any).recordDeadLetters;
    expect(result.createdCount).toBe(2);
    expect(result.duplicateCount).toBe(2);
    const [a, b, c, d] = result.results;
    expect(a.created).toBe(true);
    expect(b).toEqual({ id: '1', created: false });
    expect(c.created).toBe(true);
    expect(d).toEqual({ id: a.id, created: false });
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' }, select: { id: true, payload: true } });
    expect(rows.map((r) => r.payload)).toEqual([1, { n: 1 }, { n: 3 }]);
  });

  it('stores text outside ASCII exactly, in payloads, headers and origins, each row its own', async () => {
    // Multi-byte UTF-8 (2, 3 and 4 bytes a character) and escapes shift every later row's bytes in
    // the batch's one JSON array: a miscounted length would cut or misplace them.
    const inputs = [
      { eventType: 'a', payload: { name: 'Zoë Ångström', emoji: '🚚📦', quote: 'say "hi"\n\\', cjk: '注文' }, headers: { note: 'über' } },
      { eventType: 'a', payload: 'plain', origin: { kind: 'redis', stream: 'flüsse-🐟', entryId: '1-0' } },
      { eventType: 'a', payload: ['€', null, 1.5], headers: { 'ключ': 'значение' } },
    ];
    const { body } = await execute(server, RECORD_MANY, { inputs });
    expect((body.data as any).recordDeadLetters.createdCount).toBe(3);
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' }, select: { payload: true, headers: true, origin: true } });
    expect(rows).toEqual([
      { payload: inputs[0]!.payload, headers: inputs[0]!.headers, origin: null },
      { payload: 'plain', headers: {}, origin: inputs[1]!.origin },
      { payload: inputs[2]!.payload, headers: inputs[2]!.headers, origin: null },
    ]);
  });

  it('stores 1,000 events in one call', async () => {
    const inputs = Array.from({ length: 1000 }, (_, i) => ({ eventType: 'bulk', payload: { i }, dedupeKey: `b-${i}` }));
    const { body } = await execute(server, RECORD_MANY, { inputs });
    expect((body.data as any).recordDeadLetters.createdCount).toBe(1000);
    expect(await t.db.deadLetter.count()).toBe(1000);
  });

  describe('refuses bad input with a coded error and writes nothing', () => {
    const big = 'x'.repeat(256 * 1024);
    const cases: [string, unknown[], { field: string; index: number | null }][] = [
      ['a payload over 256 KiB', [{ eventType: 'a', payload: 1 }, { eventType: 'a', payload: { big } }], { field: 'payload', index: 1 }],
      ['an empty event type', [{ eventType: '', payload: 1 }, { eventType: 'a', payload: 1 }], { field: 'eventType', index: 0 }],
      ['headers that are not an object', [{ eventType: 'a', payload: 1, headers: [1] }, { eventType: 'a', payload: 1 }], { field: 'headers', index: 0 }],
      ['max attempts out of range', [{ eventType: 'a', payload: 1, maxAttempts: 0 }, { eventType: 'a', payload: 1 }], { field: 'maxAttempts', index: 0 }],
      ['a malformed ordering sequence', [{ eventType: 'a', payload: 1 }, { eventType: 'a', payload: 1, orderingSeq: '-1' }], { field: 'orderingSeq', index: 1 }],
      ['an over-long dedupe key', [{ eventType: 'a', payload: 1, dedupeKey: 'k'.repeat(501) }, { eventType: 'a', payload: 1 }], { field: 'dedupeKey', index: 0 }],
      ['a batch over 1,000', Array.from({ length: 1001 }, () => ({ eventType: 'a', payload: 1 })), { field: 'inputs', index: null }],
      ['an empty batch', [], { field: 'inputs', index: null }],
    ];
    it('a NUL character in a payload: refused before anything runs, naming where it is', async () => {
      const before = await tablesDigest(t.handle);
      const { body } = await execute(server, RECORD_MANY, { inputs: [{ eventType: 'a', payload: { s: 'a\u0000b' } }, { eventType: 'a', payload: 1 }] });
      expect(body.errors?.map((e) => e.extensions)).toEqual([{ code: 'BAD_USER_INPUT', field: '$inputs[0].payload.s' }]);
      expect(await tablesDigest(t.handle)).toBe(before);
    });
    it.each(cases)('%s', async (_name, inputs, expected) => {
      await execute(server, RECORD_ONE, { input: { eventType: 'a', payload: 'existing', dedupeKey: 'e' } });
      const before = await tablesDigest(t.handle);
      const { body } = await execute(server, RECORD_MANY, { inputs });
      expect((body.data as any).recordDeadLetters).toMatchObject({ __typename: 'ValidationError', code: 'VALIDATION', ...expected });
      expect(await tablesDigest(t.handle)).toBe(before);
    });
  });

  it('maps the database’s own size check (jsonb text form) to the same ValidationError, storing nothing', async () => {
    // Compact JSON just under 256 KiB, but jsonb's text form adds a space after each ':' and ','.
    const payload = Object.fromEntries(Array.from({ length: 23_000 }, (_, i) => [`k${String(i).padStart(5, '0')}`, 1]));
    expect(JSON.stringify(payload).length).toBeLessThan(256 * 1024);
    const { body } = await execute(server, RECORD_MANY, { inputs: [{ eventType: 'a', payload: 1 }, { eventType: 'a', payload }] });
    expect((body.data as any).recordDeadLetters).toMatchObject({ __typename: 'ValidationError', code: 'VALIDATION', field: 'payload' });
    expect(await t.db.deadLetter.count()).toBe(0);
    expect(await t.db.deadLetterAction.count()).toBe(0);
  });

  it('refuses an event type outside the configured list', async () => {
    const restricted = writeServer(t.handle, undefined, { allowedEventTypes: ['order.placed'], redriveThreshold: 1000, redriveRatePerSecond: 100 });
    const before = await tablesDigest(t.handle);
    const { body } = await execute(restricted, RECORD_MANY, { inputs: [{ eventType: 'order.placed', payload: 1 }, { eventType: 'order.plaecd', payload: 1 }] });
    expect((body.data as any).recordDeadLetters).toMatchObject({ __typename: 'ValidationError', field: 'eventType', index: 1 });
    expect(await tablesDigest(t.handle)).toBe(before);
  });

  it('refuses a viewer with FORBIDDEN and a caller without a key with UNAUTHENTICATED', async () => {
    const inputs = [{ eventType: 'a', payload: 1 }];
    const asViewer = await execute(writeServer(t.handle, { name: 'v', role: 'viewer' }), RECORD_MANY, { inputs });
    const anonymous = await execute(writeServer(t.handle, null), RECORD_MANY, { inputs });
    expect(asViewer.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(anonymous.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(await t.db.deadLetter.count()).toBe(0);
  });
});
