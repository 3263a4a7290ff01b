import { getNamedType, isInputObjectType, isScalarType, type GraphQLInputType } from 'graphql';
import { createYoga, type Plugin } from 'graphql-yoga';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LOCAL_PRINCIPAL } from '../src/auth/principal.ts';
import { schema } from '../src/graphql/schema.ts';
import type { GraphQLServer } from '../src/graphql/server.ts';
import { useCompiledQueries } from '../src/graphql/useCompiledQueries.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
let server: GraphQLServer;

beforeAll(() => {
  server = testServer(t.db);
});
beforeEach(async () => {
  await insertDeadLetter(t.db, { status: 'EXHAUSTED', attempts: 3 });
  await insertDeadLetter(t.db, { queue: 'payments', errorStack: 'Error: x\n    at y' });
});

async function post(target: { fetch: GraphQLServer['fetch'] }, query: string, variables: Record<string, unknown> = {}, operationName?: string) {
  const response = await target.fetch('http://lazarus/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables, operationName }),
  });
  return `${response.status} ${await response.text()}`;
}

// The same bytes on every run: the first is interpreted by graphql-js, later ones run compiled.
async function expectSameAnswers(query: string, variables: Record<string, unknown> = {}, operationName?: string) {
  const answers = [];
  for (let run = 0; run < 3; run++) answers.push(await post(server, query, variables, operationName));
  expect(answers[1]).toBe(answers[0]);
  expect(answers[2]).toBe(answers[0]);
  return answers[0]!;
}

describe('repeated queries', () => {
  it('answer a page, its cursors and its count byte for byte as on the first run', async () => {
    const answer = await expectSameAnswers(`query ($filter: DeadLetterFilter) {
      deadLetters(first: 5, filter: $filter) { totalCount edges { cursor node { id eventType status attempts queue createdAt
        error { kind message stack } payload } } pageInfo { startCursor endCursor hasNextPage hasPreviousPage } } }`, { filter: { queues: ['payments', 'default'] } });
    expect(answer).toMatch(/^200 \{"data":\{"deadLetters":\{"totalCount":2,/);
  });

  it('report errors with their locations and codes as on the first run', async () => {
    const answer = await expectSameAnswers(`query Bad {
      ok: __typename
      deadLetters(first: 2,
        after: "not a cursor") { edges { node { id } } }
    }`);
    expect(JSON.parse(answer.slice(4))).toEqual({
      errors: [{ message: 'after is not a cursor of this ordering', locations: [{ line: 3, column: 7 }], path: ['deadLetters'], extensions: { code: 'BAD_USER_INPUT', argument: 'after' } }],
      data: null,
    });
  });

  it('refuse variables that do not coerce with HTTP 400, as on the first run', async () => {
    const answer = await expectSameAnswers('query ($f: DeadLetterFilter) { deadLetters(filter: $f) { totalCount } }', { f: { statuses: ['NOPE'] } });
    expect(answer).toMatch(/^400 .*Variable \\"\$f\\" got invalid value \\"NOPE\\" at \\"f\.statuses\[0\]\\".*BAD_USER_INPUT/);
  });

  it('keep the query order of fields from fragments and under @skip', async () => {
    const fragments = await expectSameAnswers(`{ deadLetters { edges { node { status ...F id ... on DeadLetter { queue status attempts } eventType ...G } } } }
      fragment F on DeadLetter { attempts id version } fragment G on DeadLetter { createdAt error { message } error { kind } }`);
    expect(fragments).toContain('{"status":"PENDING","attempts":0,"id":');
    await expectSameAnswers(`query ($s: Boolean!) { deadLetters { edges { node { id eventType @skip(if: $s) ...F @include(if: $s)
      ... on DeadLetter @skip(if: $s) { queue } status } } } } fragment F on DeadLetter { attempts source }`, { s: false });
  });

  it('run the operation named in each request, also from one document', async () => {
    const document = 'query Count { deadLetters { totalCount } } query Typename { __typename }';
    const answers = [];
    for (const name of ['Count', 'Count', 'Typename', 'Count', 'Typename']) answers.push(await post(server, document, {}, name));
    expect(answers).toEqual(['Count', 'Count', 'Typename', 'Count', 'Typename'].map((name) =>
      name === 'Count' ? '200 {"data":{"deadLetters":{"totalCount":2}}}' : '200 {"data":{"__typename":"Query"}}'));
  });

  it('run compiled from the second run of a document, and mutations never', async () => {
    // graphql-js's results have null-prototype objects; graphql-jit's are plain.
    const interpreted: string[] = [];
    const probe: Plugin = {
      onExecute: ({ args }) => ({
        onExecuteDone: ({ result }) => {
          if (!('data' in result) || !result.data) return;
          if (Object.getPrototypeOf(result.data) === null) interpreted.push(args.operationName ?? '');
        },
      }),
    };
    const yoga = createYoga({ schema, plugins: [useCompiledQueries(), probe], context: () => ({ db: t.db, principal: LOCAL_PRINCIPAL }) });
    const runs = [['query Q { __typename }', 'Q'], ['query Q { __typename }', 'Q'], ['query Q { __typename }', 'Q'], ['query R { __typename }', 'R'],
      ['mutation M { resolveDeadLetters(input: { ids: [], reason: "r" }) { __typename } }', 'M'], ['mutation M { resolveDeadLetters(input: { ids: [], reason: "r" }) { __typename } }', 'M']];
    for (const [query, name] of runs) await post(yoga, query!, {}, name);
    expect(interpreted).toEqual(['Q', 'R', 'M', 'M']);
  });
});

describe('the schema, for compiled queries', () => {
  it('has no query argument of a scalar whose parseLiteral reads variables (graphql-jit would pass none)', () => {
    const readsVariables: string[] = [];
    const seen = new Set<string>();
    const visit = (type: GraphQLInputType, where: string) => {
      const named = getNamedType(type);
      if (seen.has(named.name)) return;
      seen.add(named.name);
      if (isScalarType(named) && named.parseLiteral.length > 1) readsVariables.push(`${where}: ${named.name}`);
      if (isInputObjectType(named)) for (const field of Object.values(named.getFields())) visit(field.type, `${where}.${field.name}`);
    };
    for (const field of Object.values(schema.getQueryType()!.getFields())) for (const arg of field.args) visit(arg.type, `${field.name}(${arg.name})`);
    expect(readsVariables).toEqual([]);
  });
});
