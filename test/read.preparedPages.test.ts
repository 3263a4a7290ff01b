// Created-order pages whose plan does not depend on their values run as named prepared statements
// (PostgreSQL then plans them once per connection); the rest are planned for their values each time.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../src/db/createDb.ts';
import { deadLetterWhereSql } from '../src/domain/deadLetterFilter.ts';
import type { GraphQLServer } from '../src/graphql/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { seedReadRows } from './helpers/readSeed.ts';

const t = useTestDatabase();
// A pool of one connection, new for each test, so pg_prepared_statements shows every statement
// the test's pages prepared.
let handle: DbHandle;
let server: GraphQLServer;
let ids: Record<string, bigint>;

beforeEach(async () => {
  ids = await seedReadRows(t.db);
  handle = createDb(t.url, { poolMax: 1, acquireTimeoutMs: 5_000, statementTimeoutMs: 15_000, applicationName: 'lazarus-test-prepared' });
  server = testServer(handle.db);
});
afterEach(async () => {
  await handle.close();
});

const PAGE = `query ($filter: DeadLetterFilter, $orderBy: DeadLetterOrder) { deadLetters(filter: $filter, orderBy: $orderBy, first: 10) { edges { node { id } } } }`;

async function pageKeys(filter: Record<string, unknown> | null, orderBy?: { field: string; direction: string }): Promise<string[]> {
  const { body } = await execute<{ deadLetters: { edges: { node: { id: string } }[] } }>(server, PAGE, { filter, orderBy });
  expect(body.errors).toBeUndefined();
  const byId = new Map(Object.entries(ids).map(([k, v]) => [v.toString(), k]));
  return body.data!.deadLetters.edges.map((e) => byId.get(e.node.id)!);
}

async function prepared(): Promise<{ statement: string; generic_plans: string }[]> {
  return (await handle.pool.query(`select statement, generic_plans from pg_prepared_statements where statement like '%from dead_letters d where%'`)).rows;
}

describe('prepared pages', () => {
  it('prepares pages filtered by single values of indexed columns, statuses and created time, and reuses one plan for a page without values', async () => {
    // Newest first; ties by id descending (see readSeed.ts).
    expect(await pageKeys(null)).toEqual(['g', 'f', 'e', 'd', 'c', 'b', 'a']);
    expect(await pageKeys({ eventTypes: ['order.placed'] })).toEqual(['g', 'b', 'a']);
    expect(await pageKeys({ eventTypes: ['user.signup'] })).toEqual(['f', 'e']);
    expect(await pageKeys({ statuses: ['PENDING', 'EXHAUSTED'], queues: ['orders'] })).toEqual(['g', 'b', 'a']);
    expect(await pageKeys({ statuses: ['PROCESSING'] })).toEqual([]);
    const statements = await prepared();
    expect(statements.map((s) => s.statement.match(/where \((.*)\) and true/)![1]).sort()).toEqual([
      'd.event_type = $1::text',
      "d.status = 'PROCESSING'::\"DeadLetterStatus\"",
      "d.status in ('PENDING', 'EXHAUSTED') and d.queue = $1::text",
      'true',
    ]);
    // The page without values is planned once for all its runs.
    await pageKeys(null);
    expect(statements.find((s) => s.statement.includes('where (true)'))?.generic_plans).toBe('1');
    expect((await prepared()).find((s) => s.statement.includes('where (true)'))?.generic_plans).toBe('2');
  });

  it('plans pages whose best plan depends on the value for each request', async () => {
    expect(await pageKeys({ eventTypes: ['order.placed', 'user.signup'] })).toEqual(['g', 'f', 'e', 'b', 'a']);
    expect(await pageKeys({ payloadContains: '{"customer":{"tier":"gold"}}' })).toEqual(['g', 'c', 'a']);
    expect(await pageKeys({ updatedAt: { from: '2026-11-02T00:00:00.000Z' } })).toEqual(['g', 'f', 'e', 'd']);
    expect(await pageKeys({ attempts: { min: 3 } })).toEqual(['g', 'f', 'c', 'b']);
    expect(await pageKeys({ orderingKey: 'cust-2' })).toEqual(['g', 'c', 'b']);
    expect(await prepared()).toEqual([]);
  });

  it('prepares the first step of error-text pages and of filtered pages in other orders: a bounded walk of the order, whatever the values', async () => {
    expect(await pageKeys({ errorText: 'inventory' })).toEqual(['e', 'b', 'a']);
    expect(await pageKeys({ errorText: 'INVENTORY', eventTypes: ['order.placed'] })).toEqual(['b', 'a']);
    expect(await pageKeys({ errorText: 'inventory', payloadContains: '{"customer":{"tier":"gold"}}' })).toEqual(['a']);
    expect(await pageKeys({ eventTypes: ['user.signup'] }, { field: 'UPDATED_AT', direction: 'ASC' })).toEqual(['e', 'f']);
    const walks = (await prepared()).map((s) => s.statement.replace(/\s+/g, ' ').match(/from \(select \* from dead_letters d where \((.*)\) and true order by (\S+) .* limit 2000\) d where (.*) order by/)!.slice(1));
    expect(walks.sort()).toEqual([
      ['d.event_type = $1::text', 'd.created_at', '(d.error_message ilike $2 or d.error_stack ilike $3)'],
      ['true', 'd.created_at', '(d.error_message ilike $1 or d.error_stack ilike $2)'],
      ['true', 'd.updated_at', 'd.event_type = $1::text'],
    ]);
  });

  it('matches nothing for an empty list of statuses or error kinds, as before', async () => {
    expect(await pageKeys({ statuses: [] })).toEqual([]);
    expect(await pageKeys({ errorKinds: [], eventTypes: ['order.placed'] })).toEqual([]);
  });

  it('writes only its own enum names into the SQL text', () => {
    expect(deadLetterWhereSql({ statuses: ['EXHAUSTED'], errorKinds: ['TIMEOUT', 'CRASH'] }).values).toEqual([]);
    expect(() => deadLetterWhereSql({ statuses: ["EXHAUSTED' or true --" as 'EXHAUSTED'] })).toThrow(/not a "DeadLetterStatus" value/);
    expect(() => deadLetterWhereSql({ errorKinds: ['toString' as 'CRASH'] })).toThrow(/not a "ErrorKind" value/);
  });
});
