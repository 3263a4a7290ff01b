import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import { DEFAULT_WRITE_CONFIG } from '../src/domain/writeConfig.ts';
import type { GraphQLServer } from '../src/api/server.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';
import { everyTableDigest, writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
let sql: pg.Pool;
let server: GraphQLServer;

beforeAll(() => {
  sql = testPool(t.url, { max: 4 });
  server = writeServer(t.handle, undefined, { ...DEFAULT_WRITE_CONFIG, redriveThreshold: 10 });
});
afterAll(async () => {
  await sql.end();
});

const field = (body: { data?: unknown; errors?: unknown }) => {
  expect(body.errors).toBeUndefined();
  return Object.values(body.data as Record<string, any>)[0];
};

/** `n` members of one group in `status`, plus a row of another group; returns the group's id once folded. */
async function group(n: number, status = 'EXHAUSTED', message = 'HTTP 503 from inventory'): Promise<string> {
  await sql.query(
    `insert into dead_letters (event_type, error_kind, error_message, status, attempts)
     select 'order.placed', 'DOWNSTREAM_API', $1 || ' (request ' || i || ')', $2::"DeadLetterStatus", 3 from generate_series(1, $3::int) i`,
    [message, status, n],
  );
  await sql.query(`insert into dead_letters (event_type, error_message, status) values ('other', 'unrelated', 'EXHAUSTED')`);
  await foldErrorGroupLedger(t.db);
  const { rows } = await sql.query<{ id: string }>(`select error_group_id::text as id from dead_letters_current d where error_message like $1 || '%' limit 1`, [message]);
  return rows[0]!.id;
}

const REQUEUE = `mutation ($input: RequeueErrorGroupMembersInput!) {
  requeueErrorGroupMembers(input: $input) {
    __typename
    ... on RequeueResult { count dryRun ids redrive { id total status filter } }
    ... on MutationError { code message }
  }
}`;
const CLOSE = (name: string, input: string) => `mutation ($input: ${input}!) {
  ${name}(input: $input) { __typename ... on BulkChange { count dryRun } ... on MutationError { code message } }
}`;

async function statuses(): Promise<Record<string, number>> {
  const { rows } = await sql.query<{ status: string; n: number }>(`select status::text, count(*)::int as n from dead_letters_current where event_type = 'order.placed' group by 1`);
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe('group actions', () => {
  it('previews a requeue of every member with a dry run that writes nothing, then requeues them and the group reopens', async () => {
    const id = await group(4);
    await sql.query(`update dead_letters_current set status = 'RESOLVED' where error_group_id = $1 and error_message like '%(request 4)'`, [id]);
    await foldErrorGroupLedger(t.db);
    await execute(server, 'mutation ($input: ErrorGroupMoveInput!) { resolveErrorGroup(input: $input) { __typename } }', { input: { id } });
    const before = await everyTableDigest(t.handle);

    const preview = field((await execute(server, REQUEUE, { input: { id, dryRun: true } })).body);
    expect(preview).toMatchObject({ __typename: 'RequeueResult', count: 3, dryRun: true, redrive: null });
    expect(preview.ids).toHaveLength(3);
    expect(await everyTableDigest(t.handle)).toBe(before);

    // force: the RESOLVED member too, which makes the RESOLVED group unresolved again.
    const done = field((await execute(server, REQUEUE, { input: { id, resetAttempts: true, force: true, reason: 'inventory is back' } })).body);
    expect(done).toMatchObject({ count: 4, dryRun: false, redrive: null });
    expect(await statuses()).toEqual({ PENDING: 4 });
    const { rows: other } = await sql.query(`select status::text from dead_letters_current where event_type = 'other'`);
    expect(other).toEqual([{ status: 'EXHAUSTED' }]);

    await foldErrorGroupLedger(t.db);
    const { body } = await execute(server, 'query ($id: ID!) { errorGroup(id: $id) { status regressedAt unresolvedCount history { toStatus reason } } }', { id });
    expect(field(body)).toMatchObject({ status: 'OPEN', regressedAt: null, unresolvedCount: 4 });
    expect(field(body).history.at(-1)).toEqual({ toStatus: 'OPEN', reason: 'a member is unresolved again' });
  });

  it('turns a requeue of a group above the redrive threshold into a throttled redrive over the group', async () => {
    const id = await group(12);
    const preview = field((await execute(server, REQUEUE, { input: { id, dryRun: true } })).body);
    expect(preview).toMatchObject({ count: 12, dryRun: true, redrive: null });
    const done = field((await execute(server, REQUEUE, { input: { id } })).body);
    expect(done).toMatchObject({ count: 12, dryRun: false, redrive: { total: 12, status: 'RUNNING', filter: { groupId: id } } });
    // The redrive requeues them at its rate; nothing has moved yet.
    expect(await statuses()).toEqual({ EXHAUSTED: 12 });
  });

  it('resolves or discards every unresolved member, and the group resolves itself once folded', async () => {
    const id = await group(3);
    const preview = field((await execute(server, CLOSE('resolveErrorGroupMembers', 'ResolveErrorGroupMembersInput'), { input: { id, reason: 'fixed upstream', dryRun: true } })).body);
    expect(preview).toEqual({ __typename: 'BulkChange', count: 3, dryRun: true });
    const narrowed = field((await execute(server, CLOSE('discardErrorGroupMembers', 'DiscardErrorGroupMembersInput'),
      { input: { id, reason: 'test traffic', filter: { errorText: '(request 1)' } } })).body);
    expect(narrowed).toEqual({ __typename: 'BulkChange', count: 1, dryRun: false });
    const resolved = field((await execute(server, CLOSE('resolveErrorGroupMembers', 'ResolveErrorGroupMembersInput'), { input: { id, reason: 'fixed upstream' } })).body);
    expect(resolved).toEqual({ __typename: 'BulkChange', count: 2, dryRun: false });
    expect(await statuses()).toEqual({ DISCARDED: 1, RESOLVED: 2 });

    await foldErrorGroupLedger(t.db);
    const { body } = await execute(server, 'query ($id: ID!) { errorGroup(id: $id) { status unresolvedCount } }', { id });
    expect(field(body)).toEqual({ status: 'RESOLVED', unresolvedCount: 0 });
  });

  it('answers NOT_FOUND for an unknown group and writes nothing', async () => {
    await group(2);
    const before = await everyTableDigest(t.handle);
    const requeue = field((await execute(server, REQUEUE, { input: { id: '424242' } })).body);
    expect(requeue).toEqual({ __typename: 'ErrorGroupNotFoundError', code: 'NOT_FOUND', message: 'no error group with id 424242' });
    const resolve = field((await execute(server, CLOSE('resolveErrorGroupMembers', 'ResolveErrorGroupMembersInput'), { input: { id: '424242', reason: 'x' } })).body);
    expect(resolve).toMatchObject({ __typename: 'ErrorGroupNotFoundError', code: 'NOT_FOUND' });
    const bad = await execute(server, REQUEUE, { input: { id: 'not-an-id' } });
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(await everyTableDigest(t.handle)).toBe(before);
  });

  it('needs the operator role', async () => {
    const id = await group(1);
    const viewer = writeServer(t.handle, { name: 'v', role: 'viewer' });
    const { body } = await execute(viewer, REQUEUE, { input: { id } });
    expect(body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});
