import { describe, expect, it } from 'vitest';
import { jsonContains, jsonEquals } from '../src/domain/jsonMatch.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();

const CASES: [unknown, unknown][] = [
  [[1, [2]], [2]], [[[1, 2]], [1]], [{ a: [1, [2]] }, { a: [2] }], [[1, 2], 1], [{ a: [1, 2] }, { a: 1 }], [[1, 2], [1, 1]],
  [[{ a: 1, b: 2 }], [{ a: 1 }]], [{ a: 1 }, {}], [[], []], [[1], []], [1, 1], ['a', ['a']], [['a'], 'a'], [[[1]], [1]],
  [[null], null], [{ a: { b: [1, { c: 2 }] } }, { a: { b: [{}] } }], [[1, 2], [[1]]], [{ a: 1 }, [{ a: 1 }]],
  [[{ a: 1 }], { a: 1 }], [{ a: 1, b: 2 }, { b: 2, a: 1 }], [[1, 2], [2, 1]], [{ a: 1 }, { a: 1, b: 2 }], ['1', 1],
];

describe('in-memory jsonb semantics', () => {
  it.each(CASES)('agrees with PostgreSQL on %j @> %j and on equality', async (a, b) => {
    const { rows } = await t.handle.pool.query<{ contains: boolean; equals: boolean }>(
      'select $1::jsonb @> $2::jsonb as contains, $1::jsonb = $2::jsonb as equals',
      [JSON.stringify(a), JSON.stringify(b)],
    );
    expect({ contains: jsonContains(a, b, true), equals: jsonEquals(a, b) }).toEqual(rows[0]);
  });
});
