import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { matchesDeadLetterFilter } from '../src/domain/deadLetterFilter.ts';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import type { GraphQLServer } from '../src/api/server.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';
import { startLiveServer, type LiveServer } from './helpers/live.ts';
import { subscribeSse, type SseSubscription } from './helpers/sse.ts';
import { writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
let sql: pg.Pool;
let server: GraphQLServer;
let live: LiveServer | undefined;
const open: SseSubscription<unknown>[] = [];

beforeAll(() => {
  sql = testPool(t.url, { max: 4 });
  server = writeServer(t.handle);
});
afterEach(async () => {
  for (const s of open.splice(0)) s.close();
  await live?.close();
  live = undefined;
});
afterAll(async () => {
  await sql.end();
});

const field = (body: { data?: unknown; errors?: unknown }) => {
  expect(body.errors).toBeUndefined();
  return Object.values(body.data as Record<string, any>)[0];
};

/** Inserts `n` rows of one failure, created `hoursAgo` hours ago; returns their group id. */
async function failures(n: number, o: { eventType?: string; message?: string; fingerprint?: string; status?: string; hoursAgo?: number } = {}): Promise<string> {
  await sql.query(
    `insert into dead_letters (event_type, error_kind, error_message, fingerprint, status, created_at)
     select $1, 'DOWNSTREAM_API', $2 || ' (request ' || i || ')', $3, $4::"DeadLetterStatus", now() - $5::int * interval '1 hour'
       from generate_series(1, $6::int) i`,
    [o.eventType ?? 'order.placed', o.message ?? 'HTTP 503 from inventory', o.fingerprint ?? null, o.status ?? 'PENDING', o.hoursAgo ?? 0, n],
  );
  await fold();
  const { rows } = await sql.query<{ id: string }>(`select error_group_id::text as id from dead_letters_current d order by d.id desc limit 1`);
  return rows[0]!.id;
}

/** What the service's folder does within a fraction of a second. */
async function fold(): Promise<void> {
  await foldErrorGroupLedger(t.db);
}

const GROUPS = `query ($orderBy: ErrorGroupOrderField, $first: Int, $after: String, $filter: ErrorGroupFilter) {
  errorGroups(orderBy: $orderBy, first: $first, after: $after, filter: $filter) {
    totalCount
    edges { cursor node { id signature count unresolvedCount recentCount status } }
    pageInfo { hasNextPage endCursor }
  }
}`;

const MOVE = (name: string) => `mutation ($input: ErrorGroupMoveInput!) {
  ${name}(input: $input) {
    __typename
    ... on ErrorGroup { id status note history { fromStatus toStatus actor reason note } }
    ... on MutationError { code message }
    ... on ErrorGroupNotFoundError { id }
    ... on InvalidErrorGroupTransitionError { id from to }
  }
}`;

describe('errorGroups', () => {
  it('orders by LAST_SEEN, COUNT, UNRESOLVED and TREND, largest first, with keyset pages', async () => {
    const old = await failures(5, { message: 'old failure', hoursAgo: 48 }); // most events, none in the last day
    const mid = await failures(3, { message: 'middle failure', hoursAgo: 2, status: 'EXHAUSTED' });
    const recent = await failures(2, { message: 'recent failure' });
    await sql.query(`update dead_letters_current set status = 'RESOLVED' where error_message like 'old failure%' and id % 5 <> 0`);
    await fold();

    const order = async (orderBy: string) =>
      (field((await execute(server, GROUPS, { orderBy })).body).edges as { node: { id: string } }[]).map((e) => e.node.id);
    expect(await order('LAST_SEEN')).toEqual([recent, mid, old]);
    expect(await order('COUNT')).toEqual([old, mid, recent]);
    expect(await order('UNRESOLVED')).toEqual([mid, recent, old]);
    expect(await order('TREND')).toEqual([mid, recent, old]);

    const first = field((await execute(server, GROUPS, { orderBy: 'COUNT', first: 2 })).body);
    expect(first.totalCount).toBe(3);
    expect(first.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([old, mid]);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = field((await execute(server, GROUPS, { orderBy: 'COUNT', first: 2, after: first.pageInfo.endCursor })).body);
    expect(second.edges.map((e: { node: { id: string } }) => e.node)).toEqual([
      { id: recent, signature: 'recent failure (request <n>)', count: 2, unresolvedCount: 2, recentCount: 2, status: 'OPEN' },
    ]);
    expect(second.pageInfo.hasNextPage).toBe(false);

    const wrongOrder = await execute(server, GROUPS, { orderBy: 'TREND', after: first.pageInfo.endCursor });
    expect(wrongOrder.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('filters by status, event type and signature text', async () => {
    await failures(1, { message: 'alpha', eventType: 'a' });
    const beta = await failures(1, { message: 'beta', eventType: 'b' });
    await failures(1, { message: 'gamma', eventType: 'b', status: 'DISCARDED' });
    const { body } = await execute(server, GROUPS, { filter: { eventTypes: ['b'], statuses: ['OPEN'], signatureText: 'ET' } });
    expect(field(body).edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([beta]);
  });
});

describe('ErrorGroup.sampleHeadline', () => {
  it('reads each group’s first stored stack frame, else its first line, for a whole page in one statement', async () => {
    for (let i = 0; i < 6; i++) await failures(2, { eventType: `type.${i}`, message: `refused by service ${i}` });
    await sql.query(`update dead_letters set error_stack = 'Error: refused' || chr(10) || '    at send (/app/src/send.ts:' || id || ':5)' where event_type in ('type.0', 'type.1')`);
    const statementsOf = async (fields: string) => {
      // Every statement the page makes, counted on the pg client the Prisma adapter uses.
      const query = pg.Client.prototype.query;
      let statements = 0;
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        statements += 1;
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
      try {
        const { body } = await execute<any>(server, `{ errorGroups(first: 50) { edges { node { eventType ${fields} } } } }`);
        return { statements, nodes: body.data!.errorGroups.edges.map((e: { node: unknown }) => e.node) as { eventType: string; sampleHeadline?: string }[] };
      } finally {
        pg.Client.prototype.query = query;
      }
    };
    const plain = await statementsOf('');
    const withHeadlines = await statementsOf('sampleHeadline');
    expect(withHeadlines.statements - plain.statements).toBe(1);
    const { rows } = await sql.query<{ event_type: string; id: string }>(`select event_type, min(id)::text as id from dead_letters group by 1`);
    const firstOf = new Map(rows.map((r) => [r.event_type, r.id]));
    expect(Object.fromEntries(withHeadlines.nodes.map((n) => [n.eventType, n.sampleHeadline]))).toEqual({
      'type.0': `at send (/app/src/send.ts:${firstOf.get('type.0')}:5)`,
      'type.1': `at send (/app/src/send.ts:${firstOf.get('type.1')}:5)`,
      'type.2': 'refused by service 2 (request 1)',
      'type.3': 'refused by service 3 (request 1)',
      'type.4': 'refused by service 4 (request 1)',
      'type.5': 'refused by service 5 (request 1)',
    });
  });
});

describe('errorGroup', () => {
  it('shows a group with its hourly counts, sample, history and members as a deadLetters connection', async () => {
    const id = await failures(3, { fingerprint: 'inventory-down' });
    await failures(2, { message: 'another failure' });
    const { body } = await execute(server, `query ($id: ID!) {
      errorGroup(id: $id) {
        signature count queues sources
        hourly(hours: 3) { count }
        sample { id errorSignature }
        history { fromStatus toStatus actor reason }
        members(first: 2) { totalCount edges { node { status } } pageInfo { hasNextPage } }
      }
    }`, { id });
    expect(field(body)).toMatchObject({
      signature: 'inventory-down',
      count: 3,
      queues: ['default'],
      sources: ['unknown'],
      hourly: [{ count: 0 }, { count: 0 }, { count: 3 }],
      sample: { errorSignature: 'HTTP <n> from inventory (request <n>)' },
      history: [{ fromStatus: null, toStatus: 'OPEN', actor: 'system', reason: 'first seen' }],
      members: { totalCount: 3, edges: [{ node: { status: 'PENDING' } }, { node: { status: 'PENDING' } }], pageInfo: { hasNextPage: true } },
    });
    const missing = await execute(server, 'query { errorGroup(id: "999999") { id } }');
    expect(missing.body).toEqual({ data: { errorGroup: null } });
  });
});

describe('DeadLetterFilter.groupId', () => {
  it('selects a group’s members in deadLetters, and bulk mutations act on them', async () => {
    const fingerprinted = await failures(3, { message: 'socket hang up', fingerprint: 'inventory-down' });
    const plain = await failures(2, { message: 'socket hang up' });
    const ids = async (groupId: string) =>
      (field((await execute(server, 'query ($f: DeadLetterFilter) { deadLetters(filter: $f) { edges { node { errorSignature } } } }', { f: { groupId } })).body)
        .edges as unknown[]).length;
    expect(await ids(fingerprinted)).toBe(3);
    expect(await ids(plain)).toBe(2);
    expect(await ids('999999')).toBe(0);

    const resolved = await execute(server, `mutation ($input: ResolveDeadLettersInput!) { resolveDeadLetters(input: $input) { ... on BulkChange { count } } }`,
      { input: { filter: { groupId: fingerprinted }, reason: 'inventory is back' } });
    expect(field(resolved.body)).toEqual({ count: 3 });
    await fold();
    const { body } = await execute(server, 'query ($id: ID!) { errorGroup(id: $id) { status unresolvedCount history { toStatus reason } } }', { id: fingerprinted });
    expect(field(body)).toEqual({
      status: 'RESOLVED',
      unresolvedCount: 0,
      history: [{ toStatus: 'OPEN', reason: 'first seen' }, { toStatus: 'RESOLVED', reason: 'no unresolved members' }],
    });
  });

  it('matches in memory on the row’s own group id, which its trigger keeps with the key', async () => {
    const id = await failures(1, { message: 'socket hang up', fingerprint: 'inventory-down' });
    const row = await t.db.deadLetter.findFirstOrThrow();
    expect(row.errorGroupId).toBe(BigInt(id));
    expect(matchesDeadLetterFilter(row, { groupId: BigInt(id) })).toBe(true);
    expect(matchesDeadLetterFilter(row, { groupId: 999999n })).toBe(false);
    const page = await execute(server, '{ deadLetters { edges { node { errorGroupId } } } }');
    expect(page.body).toEqual({ data: { deadLetters: { edges: [{ node: { errorGroupId: id } }] } } });
    // Dropping the fingerprint moves the row to the group of its computed signature.
    await sql.query(`update dead_letters_current set fingerprint = null where id = $1`, [row.id]);
    const moved = await t.db.deadLetter.findFirstOrThrow();
    expect(moved.errorGroupId).not.toBe(BigInt(id));
    expect(matchesDeadLetterFilter(moved, { groupId: BigInt(id) })).toBe(false);
    const { rows } = await sql.query<{ id: string }>(`select lazarus_error_group_id('order.placed', 'DOWNSTREAM_API', 'socket hang up (request <n>)')::text as id`);
    expect(moved.errorGroupId).toBe(BigInt(rows[0]!.id));
  });

  it('filters a deadLetterAdded subscription to the group', async () => {
    const id = await failures(1, { message: 'socket hang up', fingerprint: 'inventory-down' });
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const s = await subscribeSse<{ deadLetterAdded: { deadLetter: { errorSignature: string } } }>(
      live.url, 'subscription ($f: DeadLetterFilter) { deadLetterAdded(filter: $f) { deadLetter { errorSignature } } }', { f: { groupId: id } });
    open.push(s as SseSubscription<unknown>);
    await failures(1, { message: 'not in the group' });
    await failures(1, { message: 'member', fingerprint: 'inventory-down' });
    const [message] = await s.take(1);
    expect(message!.data).toEqual({ deadLetterAdded: { deadLetter: { errorSignature: 'member (request <n>)' } } });
  });
});

describe('error group mutations', () => {
  it('acknowledges, ignores, resolves and reopens, recording actor, reason and note', async () => {
    const id = await failures(1);
    const ack = field((await execute(server, MOVE('acknowledgeErrorGroup'), { input: { id, reason: 'looking', note: 'INC-42' } })).body);
    expect(ack).toMatchObject({ __typename: 'ErrorGroup', status: 'ACKNOWLEDGED', note: 'INC-42' });
    expect(ack.history.at(-1)).toEqual({ fromStatus: 'OPEN', toStatus: 'ACKNOWLEDGED', actor: 'ops-alice', reason: 'looking', note: 'INC-42' });
    expect(field((await execute(server, MOVE('ignoreErrorGroup'), { input: { id } })).body)).toMatchObject({ status: 'IGNORED', note: 'INC-42' });
    expect(field((await execute(server, MOVE('resolveErrorGroup'), { input: { id, reason: 'fixed' } })).body)).toMatchObject({ status: 'RESOLVED' });
    const reopened = field((await execute(server, MOVE('reopenErrorGroup'), { input: { id } })).body);
    expect(reopened.status).toBe('OPEN');
    expect(reopened.history.map((h: { toStatus: string }) => h.toStatus)).toEqual(['OPEN', 'ACKNOWLEDGED', 'IGNORED', 'RESOLVED', 'OPEN']);
  });

  it('reports NOT_FOUND for an unknown id and CONFLICT for a move its status does not allow, writing nothing', async () => {
    const id = await failures(1);
    expect(field((await execute(server, MOVE('acknowledgeErrorGroup'), { input: { id: '999999' } })).body)).toEqual({
      __typename: 'ErrorGroupNotFoundError', code: 'NOT_FOUND', message: 'no error group with id 999999', id: '999999',
    });
    expect(field((await execute(server, MOVE('reopenErrorGroup'), { input: { id } })).body)).toMatchObject({
      __typename: 'InvalidErrorGroupTransitionError', code: 'CONFLICT', id, from: 'OPEN', to: 'OPEN',
    });
    const { rows } = await sql.query('select count(*)::int as n from error_group_actions');
    expect(rows[0]).toEqual({ n: 1 });
  });

  it('needs the operator role', async () => {
    const id = await failures(1);
    const viewer = writeServer(t.handle, { name: 'v', role: 'viewer' });
    const { body } = await execute(viewer, MOVE('resolveErrorGroup'), { input: { id } });
    expect(body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});
