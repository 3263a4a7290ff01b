import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deadLetterWhereSql, isEventFilter } from '../src/db/sql/deadLetterWhere.ts';
import { matchesDeadLetterFilter } from '../src/domain/deadLetterFilter.ts';
import { parseDeadLetterFilter } from '../src/api/schema/deadLetterFilter.ts';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { hours, seedReadRows } from './helpers/readSeed.ts';

const t = useTestDatabase();
let server: GraphQLServer;
let ids: Record<string, bigint>;

beforeAll(() => {
  server = testServer(t.db);
});
beforeEach(async () => {
  ids = await seedReadRows(t.db);
});

const LIST = `query ($filter: DeadLetterFilter) {
  deadLetters(filter: $filter, first: 500, orderBy: { field: CREATED_AT, direction: ASC }) { totalCount edges { node { id } } }
}`;

type ListData = { deadLetters: { totalCount: number; edges: { node: { id: string } }[] } };

function keysOf(idList: string[]): string[] {
  const byId = new Map(Object.entries(ids).map(([k, v]) => [v.toString(), k]));
  return idList.map((id) => byId.get(id)!).sort();
}

const iso = (h: number) => hours(h).toISOString();

/** What the DateTime scalar does to variables before parseDeadLetterFilter sees them. */
function withDates(filter: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...filter };
  for (const field of ['createdAt', 'updatedAt', 'nextAttemptAt']) {
    const range = filter[field] as { from?: string; to?: string } | undefined;
    if (range) out[field] = { from: range.from && new Date(range.from), to: range.to && new Date(range.to) };
  }
  return out;
}

const CASES: [string, Record<string, unknown>, string[]][] = [
  ['statuses', { statuses: ['PENDING'] }, ['a', 'c', 'g']],
  ['eventTypes', { eventTypes: ['order.shipped'] }, ['c', 'd']],
  ['queues', { queues: ['default'] }, ['e', 'f']],
  ['sources', { sources: ['checkout'] }, ['a', 'b', 'g']],
  ['orderingKey', { orderingKey: 'cust-2' }, ['b', 'c', 'g']],
  ['errorKinds', { errorKinds: ['TIMEOUT', 'CRASH'] }, ['c', 'd', 'g']],
  ['errorText in message or stack, any case', { errorText: 'INVENTORY' }, ['a', 'b', 'e']],
  ['errorText only in the stack', { errorText: 'fetchstock' }, ['b']],
  ['errorText with SQL in it, as data', { errorText: "' OR 1=1 --" }, ['g']],
  ['errorText with % taken literally', { errorText: '1%1' }, []],
  ['errorText with _ taken literally', { errorText: '1_1' }, []],
  ['errorText with a literal %', { errorText: '100%' }, ['e']],
  ['payloadContains a nested object', { payloadContains: '{"customer":{"tier":"gold"}}' }, ['a', 'c', 'g']],
  ['payloadContains an array element', { payloadContains: '{"items":[2]}' }, ['a']],
  ['payloadContains a primitive in a top-level array', { payloadContains: '2' }, ['e']],
  ['payloadContains an array', { payloadContains: '[1, 3]' }, ['e']],
  ['payloadPath equal to a string', { payloadPath: { path: ['customer', 'id'], equals: '"c-1"' } }, ['a', 'c', 'g']],
  ['payloadPath equal to a number, not a string', { payloadPath: { path: ['orderId'], equals: '1' } }, ['a']],
  ['payloadPath equal to a whole object, not a superset', { payloadPath: { path: ['customer'], equals: '{"tier":"gold","id":"c-1"}' } }, ['a', 'g']],
  ['payloadPath equal to null', { payloadPath: { path: ['customer'], equals: 'null' } }, ['f']],
  ['createdAt range is half-open', { createdAt: { from: iso(0), to: iso(26) } }, ['a', 'b', 'c']],
  ['createdAt from only', { createdAt: { from: iso(30) } }, ['e', 'f', 'g']],
  ['updatedAt to only', { updatedAt: { to: iso(3) } }, ['a', 'b']],
  ['nextAttemptAt range skips rows without one', { nextAttemptAt: { from: iso(4), to: iso(5) } }, ['c', 'g']],
  ['attempts range is inclusive', { attempts: { min: 3, max: 4 } }, ['c', 'f', 'g']],
  ['attempts min only', { attempts: { min: 10 } }, ['b']],
  ['errorSignatures group messages that differ in numbers', { errorSignatures: ['HTTP <n> from inventory-service (request <n>)'] }, ['a', 'b']],
  ['errorSignatures group messages that differ in uuids', { errorSignatures: ['timeout after <n> ms calling <uuid>'] }, ['c', 'd']],
  ['a status and an ordering key', { statuses: ['PENDING'], orderingKey: 'cust-2' }, ['c', 'g']],
  ['type, error text and attempts', { eventTypes: ['order.placed'], errorText: '503', attempts: { max: 5 } }, ['a']],
  ['payload and time', { payloadContains: '{"customer":{"tier":"gold"}}', createdAt: { from: iso(1) } }, ['c', 'g']],
  ['an empty filter', {}, ['a', 'b', 'c', 'd', 'e', 'f', 'g']],
];

describe('DeadLetterFilter', () => {
  it.each(CASES)('selects exactly the rows for %s, in SQL and in memory alike', async (_name, filter, expected) => {
    const { body } = await execute<ListData>(server, LIST, { filter });
    expect(body.errors).toBeUndefined();
    const got = body.data!.deadLetters;
    expect(keysOf(got.edges.map((e) => e.node.id))).toEqual(expected);
    expect(got.totalCount).toBe(expected.length);

    const rows = await t.db.deadLetter.findMany();
    const parsed = parseDeadLetterFilter(withDates(filter) as never);
    expect(keysOf(rows.filter((r) => matchesDeadLetterFilter(r, parsed)).map((r) => r.id.toString()))).toEqual(expected);
  });

  it('selects rows by id', async () => {
    const filter = { ids: [ids.a!.toString(), ids.c!.toString(), '999999'] };
    const { body } = await execute<ListData>(server, LIST, { filter });
    expect(keysOf(body.data!.deadLetters.edges.map((e) => e.node.id))).toEqual(['a', 'c']);
  });

  it('matches nothing for an empty list of statuses or error kinds', async () => {
    for (const filter of [{ statuses: [] }, { errorKinds: [], eventTypes: ['order.placed'] }]) {
      const { body } = await execute<ListData>(server, LIST, { filter });
      expect(body.errors).toBeUndefined();
      expect(body.data!.deadLetters).toEqual({ totalCount: 0, edges: [] });
    }
  });

  it('writes only its own enum names into the SQL text', () => {
    expect(deadLetterWhereSql({ statuses: ['EXHAUSTED'], errorKinds: ['TIMEOUT', 'CRASH'] }).values).toEqual([]);
    expect(() => deadLetterWhereSql({ statuses: ["EXHAUSTED' or true --" as 'EXHAUSTED'] })).toThrow(/not a "DeadLetterStatus" value/);
    expect(() => deadLetterWhereSql({ errorKinds: ['toString' as 'CRASH'] })).toThrow(/not a "ErrorKind" value/);
  });

  it('stores the error signature its row trigger computes', async () => {
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' }, select: { errorSignature: true } });
    expect(rows.map((r) => r.errorSignature)).toEqual([
      'HTTP <n> from inventory-service (request <n>)',
      'HTTP <n> from inventory-service (request <n>)',
      'timeout after <n> ms calling <uuid>',
      'timeout after <n> ms calling <uuid>',
      "field 'email' <n>% invalid_value",
      "field 'name' too long at <ts>",
      "' OR <n>=<n> --",
    ]);
  });
});

describe('isEventFilter', () => {
  it.each(CASES)('says %s reads dead_letters alone only when dead_letters alone gives the same rows', async (_name, filter, expected) => {
    const parsed = parseDeadLetterFilter(withDates(filter) as never);
    if (isEventFilter(parsed)) {
      const fromTable = await t.db.$queryRaw<{ id: bigint }[]>`select d.id from dead_letters d where ${deadLetterWhereSql(parsed)}`;
      expect(keysOf(fromTable.map((r) => r.id.toString()))).toEqual(expected);
    }
    const stateFields = ['statuses', 'updatedAt', 'nextAttemptAt', 'attempts'];
    expect(isEventFilter(parsed)).toBe(!Object.keys(parsed).some((field) => stateFields.includes(field)));
  });
});

describe('DeadLetterFilter bad input', () => {
  const BAD: [string, Record<string, unknown>, string][] = [
    ['an inverted createdAt range', { createdAt: { from: iso(5), to: iso(1) } }, 'filter.createdAt'],
    ['an inverted nextAttemptAt range', { nextAttemptAt: { from: iso(5), to: iso(1) } }, 'filter.nextAttemptAt'],
    ['an inverted attempts range', { attempts: { min: 5, max: 1 } }, 'filter.attempts'],
    ['invalid JSON in payloadContains', { payloadContains: '{"a":' }, 'filter.payloadContains'],
    ['invalid JSON in payloadPath.equals', { payloadPath: { path: ['a'], equals: 'gold' } }, 'filter.payloadPath.equals'],
    ['an empty payloadPath', { payloadPath: { path: [], equals: '1' } }, 'filter.payloadPath.path'],
    ['errorText under 3 characters', { errorText: 'ab' }, 'filter.errorText'],
    ['a malformed id', { ids: ['1.5'] }, 'filter.ids'],
    ['an id beyond int64', { ids: ['9223372036854775808'] }, 'filter.ids'],
  ];

  it.each(BAD)('answers BAD_USER_INPUT for %s', async (_name, filter, argument) => {
    const { status, body } = await execute(server, LIST, { filter });
    expect(status).toBe(200);
    expect(body.data).toBeNull();
    expect(body.errors).toHaveLength(1);
    expect(body.errors![0]!.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument });
  });

  it('answers a coded error for an unknown enum value in a variable', async () => {
    const { body } = await execute(server, LIST, { filter: { statuses: ['NOPE'] } });
    expect(body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('answers a coded validation error for an unknown enum value written inline', async () => {
    const { body } = await execute(server, '{ deadLetters(filter: { statuses: [NOPE] }) { totalCount } }');
    expect(body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });
});
