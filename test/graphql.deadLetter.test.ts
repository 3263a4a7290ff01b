import { beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
let server: GraphQLServer;

beforeAll(() => {
  server = testServer(t.db);
});

const DEAD_LETTER = `query ($id: ID!) {
  deadLetter(id: $id) {
    id eventType queue source status attempts payload headers
    error { kind message stack }
    deliveryAttempts { attemptNumber outcome statusCode }
  }
}`;

describe('deadLetter(id)', () => {
  it('returns a row inserted with plain SQL, with its payload, error and attempts', async () => {
    const [row] = await t.db.$queryRaw<{ id: bigint }[]>`
      INSERT INTO dead_letters (event_type, payload, error_message)
      VALUES ('order.placed', '{"orderId": 7}', 'HTTP 503 from inventory-service') RETURNING id`;
    const id = row!.id;
    await t.db.deliveryAttempt.createMany({
      data: [
        { deadLetterId: id, attemptNumber: 2, workerId: 'w', durationMs: 5, outcome: 'FAILED', statusCode: 500 },
        { deadLetterId: id, attemptNumber: 1, workerId: 'w', durationMs: 7, outcome: 'TIMED_OUT' },
      ],
    });

    const { status, body } = await execute(server, DEAD_LETTER, { id: id.toString() });

    expect(status).toBe(200);
    expect(body).toEqual({
      data: {
        deadLetter: {
          id: id.toString(),
          eventType: 'order.placed',
          queue: 'default',
          source: 'unknown',
          status: 'PENDING',
          attempts: 0,
          payload: { orderId: 7 },
          headers: {},
          error: { kind: 'UNKNOWN', message: 'HTTP 503 from inventory-service', stack: null },
          deliveryAttempts: [
            { attemptNumber: 1, outcome: 'TIMED_OUT', statusCode: null },
            { attemptNumber: 2, outcome: 'FAILED', statusCode: 500 },
          ],
        },
      },
    });
  });

  it('is null for an id that does not exist', async () => {
    const { body } = await execute(server, DEAD_LETTER, { id: '9223372036854775807' });
    expect(body).toEqual({ data: { deadLetter: null } });
  });

  it.each(['abc', '-1', '1.5', '0', '01', '9223372036854775808', "1' OR 1=1 --", ''])(
    'answers BAD_USER_INPUT for the malformed id %j',
    async (id) => {
      const { status, body } = await execute(server, DEAD_LETTER, { id });
      expect(status).toBe(200);
      expect(body.data).toEqual({ deadLetter: null });
      expect(body.errors).toHaveLength(1);
      expect(body.errors![0]!.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument: 'id' });
    },
  );
});

describe('deadLetters', () => {
  const PAGE = `query ($first: Int, $after: String) {
    deadLetters(first: $first, after: $after) {
      totalCount
      edges { node { id } }
      pageInfo { hasNextPage endCursor }
    }
  }`;

  type Page = { deadLetters: { totalCount: number; edges: { node: { id: string } }[]; pageInfo: { hasNextPage: boolean; endCursor: string } } };

  it('walks every row newest first, page by page, with a total count', async () => {
    const rows = [];
    for (let i = 0; i < 5; i++) rows.push(await insertDeadLetter(t.db));
    const expected = rows.map((r) => r.id.toString()).reverse();

    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const response: { body: { data?: Page | null } } = await execute<Page>(server, PAGE, { first: 2, after });
      const page = response.body.data!.deadLetters;
      expect(page.totalCount).toBe(5);
      seen.push(...page.edges.map((e) => e.node.id));
      pages += 1;
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }

    expect(seen).toEqual(expected);
    expect(pages).toBe(3);
  });
});

describe('access', () => {
  it('rejects a caller without credentials with UNAUTHENTICATED and no data', async () => {
    await insertDeadLetter(t.db);
    const anonymous = testServer(t.db, { authenticate: () => null });

    const { body } = await execute(anonymous, '{ deadLetters { totalCount } }');

    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});

describe('deadLetters(filter)', () => {
  it('combines the given fields with AND', async () => {
    const a = await insertDeadLetter(t.db, { eventType: 'order.placed', queue: 'orders' });
    await insertDeadLetter(t.db, { eventType: 'order.placed', queue: 'billing' });
    await insertDeadLetter(t.db, { eventType: 'user.created', queue: 'orders' });

    const { body } = await execute(server, `{ deadLetters(filter: { eventTypes: ["order.placed"], queues: ["orders"] }) { totalCount edges { node { id } } } }`);

    expect(body).toEqual({ data: { deadLetters: { totalCount: 1, edges: [{ node: { id: a.id.toString() } }] } } });
  });

  it('treats SQL-looking values as data', async () => {
    await insertDeadLetter(t.db);
    const { body } = await execute(server, `{ deadLetters(filter: { eventTypes: ["' OR 1=1 --"] }) { totalCount } }`);
    expect(body).toEqual({ data: { deadLetters: { totalCount: 0 } } });
  });
});

// JSON numbers a double cannot carry: JSON.parse would make the first 12345678901234567000 and the
// second 0.1. Each request below is sent and read as text, so nothing on the test's side rounds.
describe('numbers a double cannot carry', () => {
  const BIG = '12345678901234567890';
  const LONG = '0.1000000000000000055511151231257827';
  const post = async (body: string) =>
    (await server.fetch('http://lazarus/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text();
  const storedPayloads = async () =>
    (await t.db.$queryRaw<{ payload: string }[]>`SELECT payload::text AS payload FROM dead_letters ORDER BY id`).map((r) => r.payload);

  it('go out as stored, in one event, in a page, in its headers and in its history', async () => {
    const [row] = await t.db.$queryRaw<{ id: bigint }[]>`
      INSERT INTO dead_letters (event_type, payload, headers, error_message)
      VALUES ('order.placed', ${`{"id": ${BIG}, "amount": ${LONG}}`}::jsonb, ${`{"offset": ${BIG}}`}::jsonb, 'x') RETURNING id`;
    await t.db.$executeRaw`
      INSERT INTO dead_letter_actions (dead_letter_id, action, actor, before)
      VALUES (${row!.id}, 'PAYLOAD_EDITED', 'test', ${`{"payload": {"id": ${BIG}}}`}::jsonb)`;

    const text = await post(JSON.stringify({
      query: `query ($id: ID!) {
        deadLetter(id: $id) { payload headers history { before } }
        deadLetters(first: 1) { edges { node { payload } } }
      }`,
      variables: { id: row!.id.toString() },
    }));

    const payload = `{"id":${BIG},"amount":${LONG}}`;
    expect(text).toBe(`{"data":{"deadLetter":{"payload":${payload},"headers":{"offset":${BIG}},"history":[{"before":null},{"before":{"payload":{"id":${BIG}}}}]},`
      + `"deadLetters":{"edges":[{"node":{"payload":${payload}}}]}}}`);
  });

  it('come in as sent, in variables and in literals, and go back out in the answer', async () => {
    const record = 'mutation ($input: RecordDeadLetterInput!) { recordDeadLetter(input: $input) { ... on RecordedDeadLetter { deadLetter { payload } } } }';
    const byVariable = await post(`{"query": ${JSON.stringify(record)}, "variables": {"input": {"eventType": "a", "payload": {"id": ${BIG}, "amount": ${LONG}}}}}`);
    const byLiteral = await post(JSON.stringify({
      query: `mutation { recordDeadLetter(input: { eventType: "b", payload: { id: ${BIG}, amount: [${LONG}] } }) { ... on RecordedDeadLetter { deadLetter { payload } } } }`,
    }));

    expect(await storedPayloads()).toEqual([`{"id": ${BIG}, "amount": ${LONG}}`, `{"id": ${BIG}, "amount": [${LONG}]}`]);
    expect(byVariable).toBe(`{"data":{"recordDeadLetter":{"deadLetter":{"payload":{"id":${BIG},"amount":${LONG}}}}}}`);
    expect(byLiteral).toBe(`{"data":{"recordDeadLetter":{"deadLetter":{"payload":{"id":${BIG},"amount":[${LONG}]}}}}}`);
  });

  it('match as sent in payload filters', async () => {
    const [exact] = await t.db.$queryRaw<{ id: bigint }[]>`INSERT INTO dead_letters (event_type, payload) VALUES ('a', ${`{"id": ${BIG}}`}::jsonb) RETURNING id`;
    await t.db.$executeRaw`INSERT INTO dead_letters (event_type, payload) VALUES ('a', '{"id": 12345678901234567000}'::jsonb)`;
    const ids = async (filter: string) =>
      (await execute<{ deadLetters: { edges: { node: { id: string } }[] } }>(server, `query ($f: DeadLetterFilter) { deadLetters(filter: $f) { edges { node { id } } } }`,
        { f: JSON.parse(filter) })).body.data?.deadLetters.edges.map((e) => e.node.id);

    expect(await ids(JSON.stringify({ payloadPath: { path: ['id'], equals: BIG } }))).toEqual([exact!.id.toString()]);
    expect(await ids(JSON.stringify({ payloadContains: `{"id": ${BIG}}` }))).toEqual([exact!.id.toString()]);
  });

  it('stay as sent through a payload edit', async () => {
    const dl = await insertDeadLetter(t.db);
    const edit = 'mutation ($input: EditDeadLetterPayloadInput!) { editDeadLetterPayload(input: $input) { ... on DeadLetter { payload } } }';
    const answer = await post(`{"query": ${JSON.stringify(edit)}, "variables": {"input": {"id": "${dl.id}", "payload": {"id": ${BIG}}}}}`);

    expect(await storedPayloads()).toEqual([`{"id": ${BIG}}`]);
    expect(answer).toBe(`{"data":{"editDeadLetterPayload":{"payload":{"id":${BIG}}}}}`);
  });
});
