import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { filterOf } from '../src/cli/lazarus.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
let server: GraphQLServer;
let ids: Record<string, string>;

beforeAll(() => {
  server = testServer(t.db);
});
beforeEach(async () => {
  ids = {
    first: String((await insertDeadLetter(t.db, { dedupeKey: 'order-1:charge' })).id),
    second: String((await insertDeadLetter(t.db, { dedupeKey: 'order-2:charge', status: 'EXHAUSTED' })).id),
    none: String((await insertDeadLetter(t.db)).id),
  };
});

const LIST = `query ($filter: DeadLetterFilter) {
  deadLetters(filter: $filter, orderBy: { field: CREATED_AT, direction: ASC }) { totalCount edges { node { id dedupeKey } } }
}`;
type ListData = { deadLetters: { totalCount: number; edges: { node: { id: string; dedupeKey: string | null } }[] } };

describe('DeadLetterFilter.dedupeKeys', () => {
  it('selects the dead letters a producer recorded under the given dedupe keys', async () => {
    const { body } = await execute<ListData>(server, LIST, { filter: { dedupeKeys: ['order-2:charge', 'order-1:charge', 'unknown'] } });
    expect(body).toEqual({
      data: { deadLetters: { totalCount: 2, edges: [{ node: { id: ids.first, dedupeKey: 'order-1:charge' } }, { node: { id: ids.second, dedupeKey: 'order-2:charge' } }] } },
    });
  });

  it('combines with the other fields, state fields included', async () => {
    const { body } = await execute<ListData>(server, LIST, { filter: { dedupeKeys: ['order-1:charge', 'order-2:charge'], statuses: ['EXHAUSTED'] } });
    expect(body.data!.deadLetters.edges.map((e) => e.node.id)).toEqual([ids.second]);
  });

  it('answers BAD_USER_INPUT for more than 1000 keys', async () => {
    const { body } = await execute(server, LIST, { filter: { dedupeKeys: Array.from({ length: 1001 }, (_, i) => `k${i}`) } });
    expect(body.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', argument: 'filter.dedupeKeys' } });
  });

  it('is the CLI’s --dedupe-key, kept whole because a key may hold commas', () => {
    expect(filterOf({ dedupeKey: 'order-1,charge', queue: 'billing' })).toEqual({ queues: ['billing'], dedupeKeys: ['order-1,charge'] });
  });
});
