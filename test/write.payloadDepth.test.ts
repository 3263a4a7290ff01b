// Payloads and headers nested deeper than 100 levels are refused on every way in (plain SQL, both
// ingest mutations, payload edits), so no stored row can overflow a reader; and a shared SSE
// stream whose execution fails for one event reports it and goes on.
import { buildSchema, parse } from 'graphql';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SHAREABLE } from '../src/live/boundedQueue.ts';
import { createSseFanOut } from '../src/api/sseFanOut.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { testServer, type GraphQLResponse } from './helpers/graphql.ts';
import { everyTableDigest } from './helpers/writes.ts';

const t = useTestDatabase();

/** `{"a":{"a":…1…}}` with the 1 at level `depth`. */
const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
};
const nestedText = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

/** Like the execute helper, but with variables written by hand: JSON.stringify cannot write 8,000 levels. */
async function send(server: ReturnType<typeof testServer>, query: string, variables: Record<string, unknown> = {}) {
  const vars = Object.entries(variables).map(([k, v]) => `${JSON.stringify(k)}:${v instanceof Nested ? nestedText(v.depth) : JSON.stringify(v)}`);
  const response = await server.fetch('http://lazarus/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: `{"query":${JSON.stringify(query)},"variables":{${vars.join(',')}}}`,
  });
  return { status: response.status, body: (await response.json()) as GraphQLResponse };
}
class Nested {
  readonly depth: number;
  constructor(depth: number) {
    this.depth = depth;
  }
}

describe('payload depth', () => {
  it('refuses a plain SQL INSERT nested deeper than 100 levels, naming the check', async () => {
    for (const column of ['payload', 'headers']) {
      const error = await t.handle.pool
        .query(`insert into dead_letters (event_type, ${column}) values ('deep', $1::jsonb)`, [nestedText(8_000)])
        .catch((e: { code?: string; constraint?: string }) => e);
      expect(error).toMatchObject({ code: '23514', constraint: `dead_letters_${column}_depth_check` });
    }
    expect(await t.db.deadLetter.count()).toBe(0);
  });

  it('accepts and serves a payload exactly 100 levels deep, on one event and on a page', async () => {
    const { rows } = await t.handle.pool.query<{ id: string }>(
      `insert into dead_letters (event_type, payload) values ('deep', $1::jsonb) returning id`, [nestedText(100)]);
    const server = testServer(t.db);

    const one = await send(server, 'query ($id: ID!) { deadLetter(id: $id) { payload } }', { id: rows[0]!.id });
    const page = await send(server, '{ deadLetters { edges { node { payload } } } }');

    expect(one.body).toEqual({ data: { deadLetter: { payload: nested(100) } } });
    expect(page.body).toEqual({ data: { deadLetters: { edges: [{ node: { payload: nested(100) } }] } } });
  });

  it.each([101, 8_000])('refuses a payload %i levels deep through both ingest mutations and an edit, writing nothing', async (depth) => {
    const event = await insertDeadLetter(t.db);
    const before = await everyTableDigest(t.handle);
    const server = testServer(t.db);
    const V = '... on ValidationError { code field index }';

    const one = await send(server, `mutation ($p: JSON!) { recordDeadLetter(input: { eventType: "t", payload: $p }) { __typename ${V} } }`, { p: new Nested(depth) });
    const many = await send(server, `mutation ($p: JSON!) { recordDeadLetters(inputs: [{ eventType: "t", payload: {} }, { eventType: "t", payload: {}, headers: $p }]) { __typename ${V} } }`, { p: new Nested(depth) });
    const edit = await send(server, `mutation ($id: ID!, $p: JSON!) { editDeadLetterPayload(input: { id: $id, payload: $p }) { __typename ${V} } }`, { id: event.id.toString(), p: new Nested(depth) });

    expect(one.body.data).toEqual({ recordDeadLetter: { __typename: 'ValidationError', code: 'VALIDATION', field: 'payload', index: null } });
    expect(many.body.data).toEqual({ recordDeadLetters: { __typename: 'ValidationError', code: 'VALIDATION', field: 'headers', index: 1 } });
    expect(edit.body.data).toEqual({ editDeadLetterPayload: { __typename: 'ValidationError', code: 'VALIDATION', field: 'payload', index: null } });
    expect(await everyTableDigest(t.handle)).toBe(before);
  });
});

describe('a shared SSE stream', () => {
  it('reports an event that cannot be encoded to its subscribers and goes on with the next', async () => {
    // A JSON value that JSON.stringify throws on, as it did on an 8,000-level payload.
    const schema = buildSchema('scalar JSON type Query { ok: Boolean } type Subscription { v: JSON }');
    const fanOut = createSseFanOut({
      maxQueuedEvents: 100,
      logger: pino({ level: 'silent' }),
      maskError: () => Object.assign(new Error('Unexpected error.'), { extensions: { code: 'INTERNAL_SERVER_ERROR' } }),
    });
    // Each subscriber brings its own source; the group reads the first one's.
    const sourceOf = (values: unknown[]) => Object.assign((async function* () {
      for (const v of values) yield { v };
    })(), { [SHAREABLE]: true });
    const args = { schema, document: parse('subscription { v }') };
    const requests = [0, 1].map(() => new Request('http://x/graphql', { headers: { accept: 'text/event-stream' } }));

    fanOut.join(requests[0], 'k', args as never, sourceOf([1, 2n, 3]));
    fanOut.join(requests[1], 'k', args as never, sourceOf([]));
    const texts = await Promise.all(requests.map(async (request) => {
      const reader = fanOut.streamFor(request, () => {})!.pipeThrough(new TextDecoderStream() as TransformStream<Uint8Array, string>).getReader();
      let text = '';
      while (!text.includes('event: complete')) text += (await reader.read()).value ?? '';
      return text;
    }));

    for (const text of texts) {
      expect([...text.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]!))).toEqual([
        { data: { v: 1 } },
        { errors: [expect.objectContaining({ message: 'Unexpected error.' })] },
        { data: { v: 3 } },
      ]);
    }
  });
});
