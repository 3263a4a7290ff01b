import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/graphql/server.ts';
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
