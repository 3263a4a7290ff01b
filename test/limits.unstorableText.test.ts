// Text PostgreSQL cannot store (a NUL, an unpaired surrogate) is refused as BAD_USER_INPUT naming the
// field, before any SQL runs, whichever argument carries it. The cases come from walking the schema,
// so an argument added later is covered without touching this file.
import {
  getNamedType,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLScalarType,
  isCompositeType,
  type GraphQLField,
  type GraphQLInputType,
} from 'graphql';
import { createClient } from 'graphql-ws';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { schema } from '../src/api/schema/schema.ts';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { startLiveServer } from './helpers/live.ts';
import { subscribeSse } from './helpers/sse.ts';
import { everyTableDigest } from './helpers/writes.ts';

const t = useTestDatabase();
const BAD = { NUL: 'a\u0000b', 'lone surrogate': 'a\ud800b' } as const;
const TEXT_SCALARS = new Set(['String', 'ID', 'JSON', 'DateTime']);

interface Leaf {
  /** Where the value sits below the variable, as the error names it: `.filter.errorText`, `[0].payload`. */
  path: string;
  /** Builds the variable's value with `text` at that place. */
  build: (text: string) => unknown;
  /** True where the text goes in as an object key (JSON values and their keys). */
  isKey?: boolean;
}

/** Every place a string can sit inside a value of `type`, walking input objects and lists. */
function leaves(type: GraphQLInputType, seen: ReadonlySet<string> = new Set()): Leaf[] {
  if (type instanceof GraphQLNonNull) return leaves(type.ofType, seen);
  if (type instanceof GraphQLList) {
    return leaves(type.ofType, seen).map((l) => ({ ...l, path: `[0]${l.path}`, build: (text) => [l.build(text)] }));
  }
  if (type instanceof GraphQLScalarType) {
    if (!TEXT_SCALARS.has(type.name)) return [];
    const value: Leaf = { path: '', build: (text) => text };
    return type.name === 'JSON'
      ? [value, { path: '', isKey: true, build: (text) => ({ [text]: 1 }) }, { path: '.k', build: (text) => ({ k: text }) }]
      : [value];
  }
  if (type instanceof GraphQLInputObjectType) {
    if (seen.has(type.name)) return [];
    const inner = new Set([...seen, type.name]);
    return Object.values(type.getFields()).flatMap((field) =>
      leaves(field.type, inner).map((l) => ({ ...l, path: `.${field.name}${l.path}`, build: (text) => ({ [field.name]: l.build(text) }) })),
    );
  }
  return [];
}

interface Case {
  name: string;
  operation: 'query' | 'mutation' | 'subscription';
  query: string;
  variables: Record<string, unknown>;
  field: string;
}

function cases(): Case[] {
  const roots = [
    ['query', schema.getQueryType()],
    ['mutation', schema.getMutationType()],
    ['subscription', schema.getSubscriptionType()],
  ] as const;
  return roots.flatMap(([operation, root]) =>
    Object.values(root!.getFields()).flatMap((field: GraphQLField<unknown, unknown>) =>
      field.args.flatMap((arg) =>
        leaves(arg.type).flatMap((leaf) =>
          Object.entries(BAD).map(([kind, text]) => ({
            name: `${field.name}(${arg.name}${leaf.path}${leaf.isKey ? ' key' : ''}) with a ${kind}`,
            operation,
            query: `${operation} ($v: ${arg.type.toString()}) { ${field.name}(${arg.name}: $v) ${isCompositeType(getNamedType(field.type)) ? '{ __typename }' : ''} }`,
            variables: { v: leaf.build(text) },
            field: leaf.isKey ? `$v${leaf.path} (a key)` : `$v${leaf.path}`,
          })),
        ),
      ),
    ),
  );
}

describe('text that cannot be stored', () => {
  const all = cases();

  it('walks every root field of the schema that takes text', () => {
    const fields = new Set(all.map((c) => c.query.match(/\{ (\w+)\(/)![1]));
    for (const expected of ['deadLetters', 'recordDeadLetter', 'recordDeadLetters', 'upsertRetryPolicy', 'editDeadLetterPayload', 'deadLetterChanged']) {
      expect(fields).toContain(expected);
    }
    expect(all.length).toBeGreaterThan(100);
  });

  it('is refused as BAD_USER_INPUT naming the field, in every argument, and writes nothing', async () => {
    await insertDeadLetter(t.db);
    const before = await everyTableDigest(t.handle);
    const server = testServer(t.db);
    const http = await listen(server);
    try {
      const wrong: unknown[] = [];
      for (const c of all) {
        const errors = c.operation === 'subscription'
          ? (await firstSseMessage(http.url, c.query, c.variables)).errors
          : (await execute(server, c.query, c.variables)).body.errors;
        const got = errors?.map((e) => ({ code: e.extensions?.code, field: e.extensions?.field }));
        if (JSON.stringify(got) !== JSON.stringify([{ code: 'BAD_USER_INPUT', field: c.field }])) wrong.push({ case: c.name, got });
      }
      expect(wrong).toEqual([]);
    } finally {
      await http.close();
    }
    expect(await everyTableDigest(t.handle)).toBe(before);
  });

  it.each([
    ['an error-text literal', '{ deadLetters(filter: { errorText: "ab\\u0000c" }) { totalCount } }', 'filter.errorText'],
    ['a payload path key literal', '{ deadLetters(filter: { payloadPath: { path: ["a\\u0000"], equals: "1" } }) { totalCount } }', 'filter.payloadPath.path'],
    ['a payload literal', 'mutation { recordDeadLetter(input: { eventType: "t", payload: { a: "x\\u0000" } }) { __typename } }', 'input.payload.a'],
  ])('refuses %s in the document, naming where it is', async (_name, query, field) => {
    const { body } = await execute(testServer(t.db), query);

    expect(body.errors?.map((e) => ({ code: e.extensions?.code, field: e.extensions?.field }))).toEqual([{ code: 'BAD_USER_INPUT', field }]);
  });

  it('refuses the same document every time it comes, not only the first (documents are cached)', async () => {
    const server = testServer(t.db);
    const query = '{ deadLetters(filter: { errorText: "ab\\u0000c" }) { totalCount } }';
    for (let i = 0; i < 3; i++) {
      const { body } = await execute(server, query);
      expect(body.errors?.map((e) => e.extensions?.field)).toEqual(['filter.errorText']);
    }
  });

  it('finds text nested deep in arrays and objects, and names its path', async () => {
    let payload: unknown = { bad: 'x\u0000' };
    for (let i = 0; i < 2_000; i++) payload = i % 2 ? { a: payload } : [payload];
    const expected = `$input.payload${Array.from({ length: 2_000 }, (_, i) => ((2_000 - 1 - i) % 2 ? '.a' : '[0]')).join('')}.bad`;

    const { body } = await execute(testServer(t.db), 'mutation ($input: RecordDeadLetterInput!) { recordDeadLetter(input: $input) { __typename } }', { input: { eventType: 't', payload } });

    expect(body.errors?.map((e) => ({ code: e.extensions?.code, field: e.extensions?.field }))).toEqual([{ code: 'BAD_USER_INPUT', field: expected }]);
  });

  it('leaves a lone surrogate escape in the document to the parser, which refuses it', async () => {
    const { body } = await execute(testServer(t.db), '{ deadLetters(filter: { errorText: "ab\\ud800c" }) { totalCount } }');

    expect(body.errors?.map((e) => e.extensions?.code)).toEqual(['GRAPHQL_PARSE_FAILED']);
  });

  it('accepts text with paired surrogates and other control characters', async () => {
    const { body } = await execute(testServer(t.db), 'query ($t: String) { deadLetters(filter: { errorText: $t }) { totalCount } }', { t: 'emoji 😀 tab\t bell\u0007' });

    expect(body).toEqual({ data: { deadLetters: { totalCount: 0 } } });
  });
});

// JSON text in a filter is parsed by the service: the escapes \u0000 and a lone surrogate are plain
// ASCII to the text guard, and become text jsonb refuses only once parsed.
describe('JSON text in a filter that jsonb cannot hold', () => {
  const F = 'query ($f: DeadLetterFilter) { deadLetters(filter: $f) { totalCount } }';
  const refusal = (body: { errors?: { extensions?: Record<string, unknown> }[] }) =>
    body.errors?.map((e) => ({ code: e.extensions?.code, argument: e.extensions?.argument }));

  const operations: [string, string, (f: unknown, group: string) => Record<string, unknown>][] = [
    ['deadLetters (a page)', 'query ($f: DeadLetterFilter) { deadLetters(filter: $f, first: 5) { edges { node { id } } } }', (f) => ({ f })],
    ['deadLetters (counts)', 'query ($f: DeadLetterFilter) { deadLetters(filter: $f) { totalCount boundedCount { count } } }', (f) => ({ f })],
    ['deadLetterStats', 'query ($f: DeadLetterFilter) { deadLetterStats(filter: $f) { total } }', (f) => ({ f })],
    ['requeueDeadLetters (dry run)', 'mutation ($f: DeadLetterFilter) { requeueDeadLetters(input: { filter: $f, dryRun: true }) { __typename } }', (f) => ({ f })],
    ['requeueDeadLetters', 'mutation ($f: DeadLetterFilter) { requeueDeadLetters(input: { filter: $f }) { __typename } }', (f) => ({ f })],
    ['resolveDeadLetters', 'mutation ($f: DeadLetterFilter) { resolveDeadLetters(input: { filter: $f, reason: "r" }) { __typename } }', (f) => ({ f })],
    ['deleteDeadLetters (dry run)', 'mutation ($f: DeadLetterFilter) { deleteDeadLetters(input: { filter: $f, dryRun: true }) { __typename } }', (f) => ({ f })],
    ['previewTransform', 'query ($f: DeadLetterFilter!) { previewTransform(input: { filter: $f, mergePatch: { x: 1 } }) { __typename } }', (f) => ({ f })],
    ['applyTransform', 'mutation ($f: DeadLetterFilter!) { applyTransform(input: { filter: $f, mergePatch: { x: 1 } }) { __typename } }', (f) => ({ f })],
    ['errorGroup.members', 'query ($id: ID!, $f: DeadLetterFilter) { errorGroup(id: $id) { members(filter: $f) { totalCount } } }', (f, id) => ({ id, f })],
    ['requeueErrorGroupMembers (dry run)', 'mutation ($id: ID!, $f: DeadLetterFilter) { requeueErrorGroupMembers(input: { id: $id, filter: $f, dryRun: true }) { __typename } }', (f, id) => ({ id, f })],
  ];
  const filters: [string, unknown, string][] = [
    ['\\u0000 in payloadContains', { payloadContains: '{"orderId":"\\u0000"}' }, 'filter.payloadContains'],
    ['a lone surrogate in payloadPath.equals', { payloadPath: { path: ['orderId'], equals: '"\\ud800"' } }, 'filter.payloadPath.equals'],
  ];

  it.each(operations.flatMap(([op, query, variables]) => filters.map(([what, f, argument]) => [`${op} with ${what}`, query, variables, f, argument] as const)))(
    'refuses %s as BAD_USER_INPUT naming the field, and writes nothing',
    async (_name, query, variables, f, argument) => {
      await insertDeadLetter(t.db);
      await foldErrorGroupLedger(t.db);
      const { rows } = await t.handle.pool.query<{ id: string }>('select error_group_id::text as id from dead_letters_current limit 1');
      const before = await everyTableDigest(t.handle);

      const { body } = await execute(testServer(t.db), query, variables(f, rows[0]!.id));

      expect(refusal(body)).toEqual([{ code: 'BAD_USER_INPUT', argument }]);
      expect(await everyTableDigest(t.handle)).toBe(before);
    },
  );

  it.each([
    ['\\u0000 in an object key', '{"a\\u0000":1}', 'filter.payloadContains (a key)'],
    ['a lone low surrogate nested in an array', '{"a":[{"b":"x\\udc00"}]}', 'filter.payloadContains.a[0].b'],
    ['a high surrogate followed by no low one', '{"a":"\\ud83dx"}', 'filter.payloadContains.a'],
    ['\\u0000 as the whole value', '"\\u0000"', 'filter.payloadContains'],
  ])('refuses %s and names where it is in the message', async (_name, text, where) => {
    const { body } = await execute(testServer(t.db), F, { f: { payloadContains: text } });

    expect(refusal(body)).toEqual([{ code: 'BAD_USER_INPUT', argument: 'filter.payloadContains' }]);
    expect(body.errors![0]!.message).toContain(where);
  });

  it('accepts a properly paired surrogate escape, in a key and a value', async () => {
    await insertDeadLetter(t.db, { payload: { 'k😀': '😀' } });

    const { body } = await execute(testServer(t.db), F, { f: { payloadContains: '{"k\\ud83d\\ude00":"\\ud83d\\ude00"}' } });

    expect(body).toEqual({ data: { deadLetters: { totalCount: 1 } } });
  });

  it('refuses it over graphql-ws too, for a live subscription', async () => {
    const live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const client = createClient({ url: live.url.replace('http', 'ws'), webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
    try {
      const errors = await new Promise<unknown>((resolve) => {
        client.subscribe(
          { query: 'subscription ($f: DeadLetterFilter) { deadLetterStatsChanged(filter: $f) { byStatus { status count } } }', variables: { f: { payloadContains: '{"a":"\\u0000"}' } } },
          { next: (message) => resolve(message.errors), error: resolve, complete: () => resolve('completed without a message') },
        );
      });

      expect(refusal({ errors: errors as never })).toEqual([{ code: 'BAD_USER_INPUT', argument: 'filter.payloadContains' }]);
    } finally {
      await client.dispose();
      await live.close();
    }
  });
});

async function listen(server: ReturnType<typeof testServer>) {
  const { createServer } = await import('node:http');
  const http = createServer(server).listen(0, '127.0.0.1');
  await new Promise((resolve) => http.once('listening', resolve));
  const { port } = http.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/graphql`, close: () => new Promise((resolve) => http.close(resolve)) };
}

async function firstSseMessage(url: string, query: string, variables: Record<string, unknown>) {
  const sub = await subscribeSse(url, query, variables);
  try {
    return await sub.next(10_000);
  } finally {
    sub.close();
  }
}
