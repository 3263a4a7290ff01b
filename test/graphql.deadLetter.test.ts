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
