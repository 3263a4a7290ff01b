// Every DeadLetterFilter field, as declared in db/deadLetterFilterFields.ts, selects the same rows in
// PostgreSQL (deadLetterWhereSql) as in memory (matchesDeadLetterFilter, which serves
// subscriptions). Values are generated from the seeded rows by each field's operator kind, so a new
// field is covered here without a line of its own.
import { beforeEach, describe, expect, it } from 'vitest';
import { deadLetterWhereSql, isEventFilter } from '../src/db/sql/deadLetterWhere.ts';
import { DEAD_LETTER_FILTER_FIELDS, matchesDeadLetterFilter, matchesRemovedDeadLetter, type DeadLetterFilter, type FilterOperator } from '../src/domain/deadLetterFilter.ts';
import type { DeadLetter } from '../src/generated/prisma/client.ts';
import { DeadLetterStatus, ErrorKind } from '../src/generated/prisma/enums.ts';
import { useTestDatabase } from './helpers/db.ts';
import { SEED_ROWS, seedReadRows } from './helpers/readSeed.ts';

const t = useTestDatabase();
let rows: DeadLetter[];

beforeEach(async () => {
  await seedReadRows(t.db, SEED_ROWS.map((row, i) => (i % 3 === 2 ? row : { ...row, dedupeKey: `msg-${row.key}` })));
  rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
});

/** mulberry32: a seeded generator, so a failing case is the same on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const ENUM_VALUES: Record<string, string[]> = { DeadLetterStatus: Object.values(DeadLetterStatus), ErrorKind: Object.values(ErrorKind) };
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function generator(rand: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const some = <T>(xs: readonly T[], n: number): T[] => Array.from({ length: n }, () => pick(xs));
  const column = (c: string) => rows.map((r) => (r as unknown as Record<string, unknown>)[c]);
  const seen = (c: string) => [...new Set(column(c).filter((v) => v !== null))];
  /** A random part of a JSON value: a subset of an object's keys or an array's elements, recursively. */
  const part = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.filter(() => rand() < 0.5).map(part);
    if (isObject(v)) return Object.fromEntries(Object.entries(v).filter(() => rand() < 0.6).map(([k, x]) => [k, part(x)]));
    return v;
  };
  /** Every (path, value) under a payload's objects, the root excluded. */
  const pathsOf = (v: unknown, path: string[] = []): [string[], unknown][] =>
    isObject(v) ? Object.entries(v).flatMap(([k, x]) => [[[...path, k], x] as [string[], unknown], ...pathsOf(x, [...path, k])]) : [];
  const shift = (d: Date, ms: number) => new Date(d.getTime() + ms);

  return function valuesFor(op: FilterOperator): unknown[] {
    switch (op.kind) {
      case 'inList':
      case 'inEnum': {
        const pool = [...seen(op.column), ...(op.kind === 'inEnum' ? ENUM_VALUES[op.enum]! : [op.type === 'bigint' ? 999_999_999n : 'no-such-value'])];
        return [[], [pick(pool)], [pick(pool)], some(pool, 2), some(pool, 3), some(pool, 4)];
      }
      case 'equals':
        return [...seen(op.column).slice(0, 4), op.type === 'bigint' ? 999_999_999n : 'no-such-value'];
      case 'textSearch': {
        const texts = op.columns.flatMap((c) => seen(c) as string[]);
        const cut = () => {
          const text = pick(texts);
          const from = Math.floor(rand() * (text.length - 3));
          const piece = text.slice(from, from + 3 + Math.floor(rand() * 8));
          return rand() < 0.5 ? piece.toUpperCase() : piece;
        };
        return [cut(), cut(), cut(), cut(), '100%', '1_1', 'no such text'];
      }
      case 'jsonContains': {
        const payloads = seen(op.column);
        return [part(pick(payloads)), part(pick(payloads)), part(pick(payloads)), part(pick(payloads)), 2, 'c-1', null, [], {}, { orderId: 999 }];
      }
      case 'jsonPathEquals': {
        const paths = seen(op.column).flatMap((p) => pathsOf(p));
        const found = some(paths, 5).map(([path, equals]) => ({ path, equals }));
        const [path] = pick(paths);
        return [...found, { path, equals: 'not there' }, { path: ['no', 'such'], equals: null }, { path: [path[0]!], equals: part(pick(paths)[1]) }];
      }
      case 'timeRange': {
        const times = seen(op.column) as Date[];
        const near = () => shift(pick(times), pick([-1, 0, 1]));
        return [{}, { from: near() }, { to: near() }, { from: near(), to: near() }, { from: near(), to: near() }, { from: near(), to: near() }];
      }
      case 'intRange': {
        const ns = seen(op.column) as number[];
        const near = () => pick(ns) + pick([-1, 0, 1]);
        return [{}, { min: near() }, { max: near() }, { min: near(), max: near() }, { min: near(), max: near() }];
      }
    }
  };
}

const ids = (xs: { id: bigint }[]) => xs.map((x) => x.id.toString()).sort();

async function expectAgreement(filter: DeadLetterFilter) {
  const label = JSON.stringify(filter, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));
  const inSql = ids(await t.db.$queryRaw<{ id: bigint }[]>`select d.id from dead_letters_current d where ${deadLetterWhereSql(filter)}`);
  expect(ids(rows.filter((r) => matchesDeadLetterFilter(r, filter))), label).toEqual(inSql);
  // The field's declared table holds what it reads: an event-only filter reads dead_letters alone.
  if (isEventFilter(filter)) {
    expect(ids(await t.db.$queryRaw<{ id: bigint }[]>`select d.id from dead_letters d where ${deadLetterWhereSql(filter)}`), label).toEqual(inSql);
  }
  // A deletion matches at least every row the filter matched (criteria on text a tombstone drops pass).
  expect(ids(rows.filter((r) => matchesRemovedDeadLetter(r, filter))), label).toEqual(expect.arrayContaining(inSql));
}

describe('DeadLetterFilter fields', () => {
  it.each(Object.keys(DEAD_LETTER_FILTER_FIELDS))('select the same rows in SQL and in memory: %s', async (field) => {
    const { op } = DEAD_LETTER_FILTER_FIELDS[field as keyof typeof DEAD_LETTER_FILTER_FIELDS];
    const values = generator(random(field.length * 7919))(op);
    expect(values.length).toBeGreaterThan(0);
    for (const value of values) await expectAgreement({ [field]: value } as DeadLetterFilter);
  });

  it('select the same rows in SQL and in memory when combined', async () => {
    const rand = random(33);
    const valuesFor = generator(rand);
    const fields = Object.entries(DEAD_LETTER_FILTER_FIELDS);
    for (let i = 0; i < 40; i += 1) {
      const filter: Record<string, unknown> = {};
      for (let n = 0; n < 2 + Math.floor(rand() * 3); n += 1) {
        const [field, { op }] = fields[Math.floor(rand() * fields.length)]!;
        const values = valuesFor(op);
        filter[field] = values[Math.floor(rand() * values.length)];
      }
      await expectAgreement(filter as DeadLetterFilter);
    }
  });
});
