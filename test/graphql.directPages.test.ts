import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDb, parseTimestamp } from '../src/db/createDb.ts';
import { isoOf } from '../src/graphql/useDirectPages.ts';
import type { GraphQLServer } from '../src/graphql/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { testServer } from './helpers/graphql.ts';
import { LOCAL_PRINCIPAL } from '../src/auth/principal.ts';

// Pages of deadLetters answered by useDirectPages must be the executor's answers byte for byte:
// each request goes to a server with it and to one without, and the two responses are compared.
const t = useTestDatabase();
let direct: GraphQLServer;
let executor: GraphQLServer;
let served = 0;
let hooks: string[] = [];
const onServed = (hook: string) => {
  served += 1;
  hooks.push(hook);
};

beforeAll(() => {
  direct = testServer(t.db, { directPages: { onServed } });
  executor = testServer(t.db, { directPages: false });
});

beforeEach(async () => {
  served = 0;
  hooks = [];
  // Values that are easy to write wrongly: quotes, backslashes, newlines, non-ASCII, nulls,
  // nested JSON, numbers JSON writes in its own way.
  const base = Date.parse('2026-03-01T10:00:00.000Z');
  for (let i = 0; i < 12; i++) {
    await insertDeadLetter(t.db, {
      eventType: ['order.placed', 'payment.captured', 'user.signup'][i % 3]!,
      queue: i % 2 ? 'payments' : 'default',
      source: 'checkout',
      status: (['PENDING', 'EXHAUSTED', 'SUCCEEDED', 'DISCARDED'] as const)[i % 4],
      attempts: (i * 7) % 5,
      orderingKey: i % 3 === 0 ? `cust-${i}` : null,
      orderingSeq: i % 3 === 0 ? BigInt(i) : null,
      dedupeKey: i === 4 ? 'dedupe "4"' : null,
      payload: { orderId: i, note: 'quote " back\\slash \n newline ✓ ünïcödé 🚀', amount: i + 0.5, big: 1e21, tiny: 1e-7, nested: { list: [i, null, true, 'x'] } },
      headers: i % 2 ? { topic: 'orders', partition: i } : {},
      errorKind: (['DOWNSTREAM_API', 'TIMEOUT', 'VALIDATION'] as const)[i % 3],
      errorMessage: `HTTP 50${i % 4} from "inventory"\tline\u2028sep\u0001`,
      errorStack: i % 2 ? `Error: boom ${i}\n    at handler (/app/h.ts:${i})` : null,
      nextAttemptAt: i % 4 === 0 ? new Date(base + i * 61_001) : null,
      createdAt: new Date(base + i * 3_600_123),
      occurredAt: new Date(base - i * 1_000),
      resolvedBy: i % 4 === 3 ? 'ops@example.com' : null,
      maxAttempts: i === 5 ? 9 : null,
    });
  }
  // Timestamps with microseconds, which a Date truncates, and without a fraction at all.
  const timestamps = ['2026-03-01 10:00:00.999999+00', '2026-03-01 10:00:01+00', '2026-03-01 10:00:02.0005+00', '2026-03-01 10:00:03.1+00', '1999-12-31 23:59:59.000001+00'];
  await t.db.$executeRaw`
    update dead_letters d set occurred_at = v.at, resolved_at = v.at
      from (select id, (${timestamps}::timestamptz[])[row_number() over (order by id)] as at from dead_letters) v
     where v.id = d.id and v.at is not null`;
});

async function post(server: GraphQLServer, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return postBody(server, { query, variables }, headers);
}

async function postBody(server: GraphQLServer, body: unknown, headers: Record<string, string> = {}) {
  const response = await server.fetch('http://lazarus/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return `${response.status} ${response.headers.get('content-type')}\n${await response.text()}`;
}

/** The response of both servers, which must be the same; returns it parsed. */
async function same(query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const [ours, theirs] = [await post(direct, query, variables, headers), await post(executor, query, variables, headers)];
  expect(ours).toBe(theirs);
  return JSON.parse(ours.slice(ours.indexOf('\n') + 1)) as { data?: any; errors?: { message: string; path?: string[]; extensions?: { code?: string } }[] };
}

const EVERY_FIELD = `id eventType queue source orderingKey orderingSeq dedupeKey payload headers error { kind message stack __typename }
  status attempts maxAttemptsOverride nextAttemptAt leaseExpiresAt resolvedAt resolvedBy resolutionReason occurredAt createdAt updatedAt version __typename`;

describe('a page of deadLetters written without the executor', () => {
  it('is the executor’s answer for every field, alias, count and page-info field', async () => {
    const answer = await same(`{
      page: deadLetters(first: 12) {
        __typename n: totalCount totalCount boundedCount(limit: 3) { count exact __typename } b2: boundedCount { exact }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor __typename }
        edges { __typename cursor node { ${EVERY_FIELD} alias: id e2: error { m: message } } }
      } }`);
    expect(answer.data.page.edges).toHaveLength(12);
    expect(answer.data.page.n).toBe(12);
    expect(answer.data.page.boundedCount).toEqual({ count: 12, exact: true, __typename: 'BoundedCount' }); // from the rollups
    expect(answer.data.page.edges[0].node.payload.note).toBe('quote " back\\slash \n newline ✓ ünïcödé 🚀');
    // A filter the rollups cannot count: boundedCount stops at its limit.
    const bounded = await same(`{ deadLetters(first: 1, filter: { sources: ["checkout"] }) { boundedCount(limit: 3) { count exact } totalCount } }`);
    expect(bounded.data.deadLetters).toEqual({ boundedCount: { count: 3, exact: false }, totalCount: 12 });
    expect(served).toBe(2);
  });

  it('is the executor’s answer over every response format Yoga offers', async () => {
    const query = `{ deadLetters(first: 3) { edges { node { id status createdAt } } } }`;
    for (const accept of ['application/graphql-response+json', 'application/json', 'text/event-stream', 'multipart/mixed']) {
      const [ours, theirs] = [await post(direct, query, {}, { accept }), await post(executor, query, {}, { accept })];
      expect(ours.replace(/boundary="?[^";\s]+"?|-{2,}[\w-]+/g, 'B')).toBe(theirs.replace(/boundary="?[^";\s]+"?|-{2,}[\w-]+/g, 'B'));
      expect(ours).toContain('"status":"');
    }
    expect(served).toBe(4);
  });

  it('walks every order forward and back, cursor by cursor, as the executor does', async () => {
    const query = `query ($first: Int, $last: Int, $after: String, $before: String, $orderBy: DeadLetterOrder, $filter: DeadLetterFilter) {
      deadLetters(first: $first, last: $last, after: $after, before: $before, orderBy: $orderBy, filter: $filter) {
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id attempts createdAt updatedAt nextAttemptAt } } } }`;
    let pages = 0;
    for (const field of ['CREATED_AT', 'UPDATED_AT', 'NEXT_ATTEMPT_AT', 'ATTEMPTS']) {
      for (const direction of ['ASC', 'DESC']) {
        for (const filter of [null, { queues: ['payments'] }, { errorText: 'inventory' }, { statuses: ['PENDING', 'EXHAUSTED'] }]) {
          const seen: string[] = [];
          let after: string | null = null;
          do {
            const page = await same(query, { first: 5, after, orderBy: { field, direction }, filter });
            pages += 1;
            seen.push(...page.data.deadLetters.edges.map((e: any) => e.node.id));
            after = page.data.deadLetters.pageInfo.hasNextPage ? page.data.deadLetters.pageInfo.endCursor : null;
          } while (after);
          expect(new Set(seen).size).toBe(seen.length);
          // And back from the end.
          const back = await same(query, { last: 4, orderBy: { field, direction }, filter });
          pages += 1;
          expect(back.data.deadLetters.edges.map((e: any) => e.node.id)).toEqual(seen.slice(-4));
        }
      }
    }
    expect(served).toBe(pages);
  });

  it('is the executor’s answer for filters given as literals and as variables', async () => {
    const node = 'edges { node { id eventType status payload } } totalCount';
    await same(`{ deadLetters(filter: { eventTypes: ["order.placed"], attempts: { min: 1 } }) { ${node} } }`);
    await same(`{ deadLetters(filter: { payloadContains: "{\\"nested\\":{\\"list\\":[3]}}" }) { ${node} } }`);
    await same(`query ($from: DateTime!) { deadLetters(filter: { createdAt: { from: $from } }) { ${node} } }`, { from: '2026-03-01T14:00:00.000Z' });
    await same(`{ deadLetters(filter: { errorText: "' OR 1=1 --" }) { ${node} } }`);
    expect(served).toBe(4);
  });

  it('leaves bad input to the executor, which reports it as before', async () => {
    const node = 'edges { node { id } }';
    const cases: [string, Record<string, unknown>?][] = [
      [`{ deadLetters(first: 0) { ${node} } }`],
      [`{ deadLetters(first: 2, last: 2) { ${node} } }`],
      [`{ deadLetters(after: "bm9wZQ") { ${node} } }`],
      [`{ deadLetters(first: 2) { boundedCount(limit: 0) { count } ${node} } }`],
      [`query ($n: Int!) { deadLetters(first: $n) { ${node} } }`, { n: 'ten' }],
      [`query ($f: DeadLetterFilter) { deadLetters(filter: $f) { ${node} } }`, { f: { statuses: ['NOPE'] } }],
      [`{ deadLetters(filter: { payloadContains: "{not json" }) { ${node} } }`],
    ];
    for (const [query, variables] of cases) {
      const answer = await same(query, variables);
      expect(answer.errors?.length, query).toBeGreaterThan(0);
    }
    expect(served).toBe(0);
  });

  it('is the executor’s answer with fragments and fields asked for twice, merged as it merges them', async () => {
    const [merged, twice, inline] = [
      await same(`query Page { deadLetters(first: 3) { totalCount edges { node { ...Row error { kind } } } pageInfo { ... on PageInfo { endCursor } } } }
        fragment Row on DeadLetter { id status error { message __typename } ...Row2 ...Row2 } fragment Row2 on DeadLetter { updatedAt id }`),
      await same(`{ deadLetters(first: 2) { edges { node { id } node { status } cursor } edges { node { id queue } } } }`),
      await same(`{ deadLetters(first: 2) { edges { node { ... { id } ... on DeadLetter { status } } } } }`),
    ];
    for (const answer of [merged, twice, inline]) expect(answer.errors).toBeUndefined();
    expect(served).toBe(3);
    expect(Object.keys(merged.data.deadLetters.edges[0].node)).toEqual(['id', 'status', 'error', 'updatedAt']);
    expect(Object.keys(merged.data.deadLetters.edges[0].node.error)).toEqual(['message', '__typename', 'kind']);
    expect(Object.keys(twice.data.deadLetters.edges[0])).toEqual(['node', 'cursor']);
    expect(Object.keys(twice.data.deadLetters.edges[0].node)).toEqual(['id', 'status', 'queue']);
  });

  it('leaves to the executor what it does not write, with the same answers', async () => {
    await same(`{ deadLetters(first: 2) { edges { node { id @include(if: true) } } } }`);
    await same(`{ deadLetters(first: 2) { edges { node { id deliveryAttempts { id } timeline { __typename } } } } }`);
    await same(`{ deadLetters(first: 2) { edges { node { id } } } deadLetterStats { total } }`);
    await same(`{ __typename deadLetters(first: 2) { edges { node { id } } } }`);
    expect(served).toBe(0);
  });

  it('writes every timestamp text PostgreSQL sends as the executor would (pg’s parser, then toISOString)', async () => {
    const texts = await t.db.$queryRaw<{ text: string }[]>`
      select ts::text as text from (
        select '2026-03-01 10:00:00+00'::timestamptz + n * interval '1.234567 second' as ts from generate_series(0, 40) n
        union all select unnest(array['2026-03-01 10:00:00.1+00', '2026-03-01 10:00:00.000001+00', '1999-12-31 23:59:59.999999+00',
                                      '0001-01-01 00:00:00+00', '0044-03-15 12:00:00+00 BC', '12026-01-01 00:00:00+00', 'infinity', '-infinity']::timestamptz[])) v`;
    expect(texts.length).toBe(49);
    // What a write gives, or the error it throws (infinity is no Date; the executor fails on it too).
    const outcome = (write: () => string) => {
      try {
        return write();
      } catch (error) {
        return (error as Error).name;
      }
    };
    for (const { text } of texts) expect(outcome(() => isoOf(text)), text).toBe(outcome(() => parseTimestamp(text).toISOString()));
  });

  it('writes timestamps of a session in another time zone as the executor does', async () => {
    // New sessions of this test's database start in UTC+05:30 (the name comes from the database itself).
    await t.db.$executeRaw`do $$ begin execute format('alter database %I set timezone = %L', current_database(), 'Asia/Kolkata'); end $$`;
    const handle = createDb(t.url, { poolMax: 1, acquireTimeoutMs: 5_000, statementTimeoutMs: 5_000, applicationName: 'direct-pages-test' });
    try {
      const zoned = [testServer(handle.db, { directPages: { onServed } }), testServer(handle.db, { directPages: false })] as const;
      const query = `{ deadLetters(first: 12, orderBy: { field: UPDATED_AT, direction: ASC }) { pageInfo { endCursor } edges { cursor node { id createdAt updatedAt occurredAt resolvedAt nextAttemptAt } } } }`;
      const [ours, theirs] = [await post(zoned[0], query), await post(zoned[1], query)];
      expect(ours).toBe(theirs);
      expect(served).toBe(1);
      const nodes = JSON.parse(ours.slice(ours.indexOf('\n') + 1)).data.deadLetters.edges.map((e: any) => e.node);
      expect(nodes.map((n: any) => n.occurredAt)).toEqual(expect.arrayContaining(['1999-12-31T23:59:59.000Z', '2026-03-01T10:00:00.999Z', '2026-03-01T10:00:01.000Z', '2026-03-01T10:00:02.000Z', '2026-03-01T10:00:03.100Z']));
    } finally {
      await handle.close();
      await t.db.$executeRaw`do $$ begin execute format('alter database %I reset timezone', current_database()); end $$`;
    }
  });

  it('refuses callers the executor refuses', async () => {
    const anonymous = testServer(t.db, { authenticate: () => null, directPages: { onServed } });
    const anonymousExecutor = testServer(t.db, { authenticate: () => null, directPages: false });
    const query = `{ deadLetters(first: 2) { edges { node { id } } } }`;
    const [ours, theirs] = [await post(anonymous, query), await post(anonymousExecutor, query)];
    expect(ours).toBe(theirs);
    expect(ours).toContain('UNAUTHENTICATED');
    expect(served).toBe(0);
  });

  it('serves a query text it has validated once from onParams, before Yoga’s own steps, with the same answers', async () => {
    const query = `query Page($first: Int, $filter: DeadLetterFilter) { deadLetters(first: $first, filter: $filter) { totalCount edges { node { id status error { kind } } } } }`;
    for (const variables of [{ first: 2 }, { first: 3, filter: { statuses: ['PENDING'] } }, { first: 1, filter: { errorText: 'inventory' } }]) await same(query, variables);
    expect(hooks).toEqual(['onExecute', 'onParams', 'onParams']);
    // Every header, not only the content type, whatever response format Yoga negotiates.
    const whole = async (server: GraphQLServer, accept: string) => {
      const response = await server.fetch('http://lazarus/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8', accept },
        body: JSON.stringify({ query, variables: { first: 2 } }),
      });
      return `${response.status}\n${[...response.headers].map(([k, v]) => `${k}: ${v}`).sort().join('\n')}\n${await response.text()}`;
    };
    const accepts = ['', '*/*', 'Application/JSON; charset=UTF-8', 'application/graphql-response+json', 'text/event-stream', 'multipart/mixed', 'application/json, text/event-stream', 'application/json; charset=latin1'];
    for (const accept of accepts) {
      const [ours, theirs] = [await whole(direct, accept), await whole(executor, accept)];
      expect(ours.replace(/boundary="?[^";\s]+"?|-{2,}[\w-]+/g, 'B'), accept).toBe(theirs.replace(/boundary="?[^";\s]+"?|-{2,}[\w-]+/g, 'B'));
    }
    expect(hooks.slice(3)).toEqual(accepts.map(() => 'onParams'));
  });

  it('leaves to Yoga, from onParams, what Yoga refuses: other parameters, a body over the cap, a caller without a key', async () => {
    const query = `query Page { deadLetters(first: 1) { edges { node { id } } } }`;
    const capped = [testServer(t.db, { http: { maxBodyBytes: 200 }, directPages: { onServed } }), testServer(t.db, { http: { maxBodyBytes: 200 }, directPages: false })] as const;
    const keyed = (request: Request) => (request.headers.get('authorization') ? LOCAL_PRINCIPAL : null);
    const guarded = [testServer(t.db, { authenticate: keyed, directPages: { onServed } }), testServer(t.db, { authenticate: keyed, directPages: false })] as const;
    const both = async (servers: readonly [GraphQLServer, GraphQLServer], body: unknown, headers: Record<string, string> = {}) => {
      const [ours, theirs] = [await postBody(servers[0], body, headers), await postBody(servers[1], body, headers)];
      expect(ours).toBe(theirs);
      return ours;
    };
    // Each server validates the text once.
    await same(query);
    await both(capped, { query });
    await both(guarded, { query }, { authorization: 'Bearer k' });
    expect(hooks).toEqual(['onExecute', 'onExecute', 'onExecute']);
    for (const body of [{ query, foo: 1 }, { query, variables: [1] }, { query, extensions: 'x' }, { query, operationName: 'Other' }, { query, operationName: 7 }, [{ query }], 'query']) {
      expect(await both([direct, executor], body)).toMatch(/^(400|200) .*"errors"/s);
    }
    expect(await both(capped, { query, variables: { pad: 'x'.repeat(200) } })).toMatch(/^413 .*PAYLOAD_TOO_LARGE/s);
    expect(await both(guarded, { query })).toMatch(/^401 .*UNAUTHENTICATED/s);
    expect(hooks).toEqual(['onExecute', 'onExecute', 'onExecute']);
  });

  it('reports a failed statement where the executor does, without running it again', async () => {
    const options = { poolMax: 1, acquireTimeoutMs: 1_000, statementTimeoutMs: 5_000, applicationName: 'direct-pages-test' };
    const [closing, closed] = [createDb(t.url, options), createDb(t.url, options)];
    await closed.close();
    const executorOnClosed = testServer(closed.db, { directPages: false });
    // Failing in onExecute (texts never seen) and in onParams (texts validated before the database went away).
    const [failsInExecute, failsInParams] = [testServer(closed.db, { directPages: { onServed } }), testServer(closing.db, { directPages: { onServed } })];
    const queries = [`{ deadLetters(first: 2) { edges { node { id } } } }`, `{ deadLetters(first: 2) { totalCount edges { node { id } } } }`];
    for (const query of queries) await post(failsInParams, query);
    expect(hooks).toEqual(['onExecute', 'onExecute']);
    await closing.close();
    for (const server of [failsInExecute, failsInParams]) {
      for (const query of queries) {
        const [ours, theirs] = [await post(server, query), await post(executorOnClosed, query)];
        expect(ours).toBe(theirs);
        expect(JSON.parse(ours.slice(ours.indexOf('\n') + 1)).data).toBeNull();
      }
    }
    expect(hooks).toEqual(['onExecute', 'onExecute']);
  });
});
