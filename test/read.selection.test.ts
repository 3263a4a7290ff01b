import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isObjectType } from 'graphql';
import { schema } from '../src/api/schema/schema.ts';
import { DEAD_LETTER_FIELD_COLUMNS } from '../src/api/schema/selection.ts';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
let server: GraphQLServer;
let id: string;

beforeAll(() => {
  server = testServer(t.db);
});
beforeEach(async () => {
  const row = await insertDeadLetter(t.db, { payload: { big: 'yes' }, headers: { trace: 't-1' }, errorStack: 'Error: x\n    at y' });
  id = row.id.toString();
});

const FULL = { id: '', payload: { big: 'yes' }, headers: { trace: 't-1' }, error: { message: 'HTTP 503 from inventory-service (request 1)', stack: 'Error: x\n    at y' } };

describe('deadLetters pages read large columns only when selected', () => {
  it.each([
    ['directly', `{ deadLetters { edges { node { id payload headers error { message stack } } } } }`],
    ['through a named fragment', `{ deadLetters { edges { node { ...Full } } } } fragment Full on DeadLetter { id payload headers error { message stack } }`],
    ['through nested inline and named fragments', `{ deadLetters { edges { ... on DeadLetterEdge { node { id ...P error { ...E } } } } } }
      fragment P on DeadLetter { payload ... on DeadLetter { headers } } fragment E on DeadLetterError { message stack }`],
    ['under an alias', `{ deadLetters { edges { node { id p: payload headers error { message stack } } } } }`],
  ])('returns payload, headers and stack when selected %s', async (_how, query) => {
    const { body } = await execute<{ deadLetters: { edges: { node: Record<string, unknown> }[] } }>(server, query);
    expect(body.errors).toBeUndefined();
    const node = body.data!.deadLetters.edges[0]!.node;
    if ('p' in node) {
      node.payload = node.p;
      delete node.p;
    }
    expect(node).toEqual({ ...FULL, id, error: { ...FULL.error, message: expect.any(String) } });
  });

  it('still answers the other fields when none of them is selected', async () => {
    const { body } = await execute<{ deadLetters: { edges: { node: Record<string, unknown> }[] } }>(
      server, `{ deadLetters { edges { node { id eventType error { kind } } } } }`,
    );
    expect(body.errors).toBeUndefined();
    expect(body.data!.deadLetters.edges).toEqual([{ node: { id, eventType: 'order.placed', error: { kind: 'DOWNSTREAM_API' } } }]);
  });
});

// Every scalar and object field of DeadLetter, as one selection.
const EVERY_FIELD = `id eventType queue source orderingKey orderingSeq dedupeKey payload headers error { kind message stack }
  status attempts maxAttemptsOverride nextAttemptAt leaseExpiresAt resolvedAt resolvedBy resolutionReason occurredAt
  createdAt updatedAt version deliveryAttempts { id } history { id } timeline { at }`;

describe('deadLetters pages read only the columns the query reaches', () => {
  it('knows the columns behind every field of DeadLetter', () => {
    const type = schema.getType('DeadLetter');
    if (!isObjectType(type)) throw new Error('DeadLetter is not an object type');
    expect(Object.keys(DEAD_LETTER_FIELD_COLUMNS).sort()).toEqual([...Object.keys(type.getFields()), 'stack'].sort());
  });

  it('answers each field alone as deadLetter(id) answers it', async () => {
    const row = await insertDeadLetter(t.db, {
      queue: 'payments', source: 'billing', orderingKey: 'cust-1', orderingSeq: 7n, dedupeKey: 'd-1', maxAttempts: 9,
      status: 'RESOLVED', attempts: 4, resolvedAt: new Date('2026-01-02T03:04:05.678Z'), resolvedBy: 'ops', resolutionReason: 'fixed',
      occurredAt: new Date('2026-01-01T00:00:00.000Z'),
    });
    const byId = await execute<{ deadLetter: Record<string, unknown> }>(server, `{ deadLetter(id: "${row.id}") { ${EVERY_FIELD} } }`);
    expect(byId.body.errors).toBeUndefined();
    const fields = EVERY_FIELD.replace(/\{[^}]*\}/g, '').split(/\s+/).filter(Boolean);
    for (const field of fields) {
      const selection = EVERY_FIELD.match(new RegExp(`\\b${field}\\b( \\{[^}]*\\})?`))![0];
      const { body } = await execute<{ deadLetters: { edges: { node: Record<string, unknown> }[] } }>(
        server, `{ deadLetters(filter: { ids: ["${row.id}"] }) { edges { node { ${selection} } } } }`,
      );
      expect(body.errors, field).toBeUndefined();
      expect(body.data!.deadLetters.edges[0]!.node, field).toEqual({ [field]: byId.body.data!.deadLetter[field] });
    }
  });
});
