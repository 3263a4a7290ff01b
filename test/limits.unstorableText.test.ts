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
import { describe, expect, it } from 'vitest';
import { schema } from '../src/api/schema/schema.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';
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
