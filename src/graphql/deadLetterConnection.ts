import { deadLetterWhereSql, type DeadLetterFilter } from '../db/sql/deadLetterWhere.ts';
import { queryPg, type Db } from '../db/createDb.ts';
import type { DeadLetter, Prisma } from '../generated/prisma/client.ts';
import { readErrorTextPage } from '../db/sql/errorTextPage.ts';
import { readOrderedPage } from '../db/sql/orderedPage.ts';
import { deadLetterCountSql, deadLetterCountUpToSql } from '../db/sql/deadLetterCount.ts';
import { rollupCountSql } from '../db/sql/rollupCount.ts';
import { rollupPlan, type RollupPlan } from '../db/sql/rollupPlan.ts';
import { deadLetterColumnsSelected } from './selection.ts';
import { readDeadLetterPage, type DeadLetterColumn, type DeadLetterOrderField, type DeadLetterPageRow } from '../db/sql/deadLetterPage.ts';
import { builder } from './builder.ts';
import { DeadLetterRef } from './deadLetter.ts';
import { DeadLetterFilterInput, parseDeadLetterFilter } from './deadLetterFilter.ts';
import { badUserInput } from './errors.ts';

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 500;
const DEFAULT_COUNT_LIMIT = 10_000;
const MAX_COUNT_LIMIT = 100_000;

export interface BoundedCount {
  count: number;
  exact: boolean;
}

const BoundedCountRef = builder.objectRef<BoundedCount>('BoundedCount').implement({
  description: 'A count that stops at a limit: "10,000+" rather than reading every matching row.',
  fields: (t) => ({
    count: t.exposeInt('count', { description: 'The number of matching rows when `exact`, otherwise the limit: there are more.' }),
    exact: t.exposeBoolean('exact'),
  }),
});

/** What the connection's count fields read: the page's filter, counted when asked. */
export interface Counts {
  total(): Promise<number>;
  upTo(limit: number): Promise<BoundedCount>;
  /** Counts the total when the rollups answer it (cheap); null when they cannot. */
  fromRollups(): (() => Promise<number>) | null;
}

const ORDER_FIELDS = ['CREATED_AT', 'UPDATED_AT', 'NEXT_ATTEMPT_AT', 'ATTEMPTS'] as const satisfies readonly DeadLetterOrderField[];

export const DeadLetterOrderFieldEnum = builder.enumType('DeadLetterOrderField', {
  description: 'What to sort dead letters by; ties are broken by id in the same direction. NEXT_ATTEMPT_AT puts rows without one last (ascending).',
  values: ORDER_FIELDS,
});

export const OrderDirectionEnum = builder.enumType('OrderDirection', { values: ['ASC', 'DESC'] as const });

export const DeadLetterOrderInput = builder.inputType('DeadLetterOrder', {
  fields: (t) => ({
    field: t.field({ type: DeadLetterOrderFieldEnum, required: true }),
    direction: t.field({ type: OrderDirectionEnum, required: true }),
  }),
});

interface Order {
  field: DeadLetterOrderField;
  descending: boolean;
}

// A cursor is base64url JSON [field, direction, sort key as PostgreSQL text, id]: opaque to
// clients, and tied to its order so a cursor from another order is refused, not misread.
function encodeCursor(order: Order, row: DeadLetterPageRow): string {
  return Buffer.from(JSON.stringify([order.field, order.descending ? 'DESC' : 'ASC', row.sortKey, row.id.toString()])).toString('base64url');
}

export interface Edge {
  cursor: string;
  node: DeadLetter;
}

function decodeCursor(cursor: string, order: Order, argument: string): { key: string; id: bigint } {
  const bad = () => badUserInput(`${argument} is not a cursor of this ordering`, { argument });
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) throw bad();
  const [field, direction, key, id] = parsed as unknown[];
  if (field !== order.field || direction !== (order.descending ? 'DESC' : 'ASC')) throw bad();
  if (typeof key !== 'string' || key.length > 100 || typeof id !== 'string' || !/^[1-9][0-9]{0,18}$/.test(id)) throw bad();
  if (order.field === 'ATTEMPTS' ? !/^-?[0-9]{1,10}$/.test(key) : !/^(infinity|[0-9]{4,}-[0-9]{2}-[0-9]{2} [0-9:.]+[+-][0-9:]+)$/.test(key)) throw bad();
  return { key, id: BigInt(id) };
}

/** boundedCount's limit, when it is one. */
function countLimit(limit: number): number {
  if (limit < 1 || limit > MAX_COUNT_LIMIT) throw badUserInput(`limit must be between 1 and ${MAX_COUNT_LIMIT}`, { argument: 'limit' });
  return limit;
}

/** boundedCount's answer; its limit is checked before anything is counted. */
function countUpTo(counts: Counts, limit: number): Promise<BoundedCount> {
  return counts.upTo(countLimit(limit));
}

function pageSize(value: number | null | undefined, argument: string): number | undefined {
  if (value == null) return undefined;
  if (value <= 0 || value > MAX_PAGE_SIZE) throw badUserInput(`${argument} must be between 1 and ${MAX_PAGE_SIZE}`, { argument });
  return value;
}

function countsOf(db: Db, filter: DeadLetterFilter, where: Prisma.Sql): Counts {
  const count = async (sql: Prisma.Sql) => (await queryPg<{ count: number }>(db, sql))[0]!.count;
  // Made when a count is first asked for: most pages select none.
  let plan: RollupPlan | null | undefined;
  const planned = () => (plan === undefined ? (plan = rollupPlan(filter)) : plan);
  let total: Promise<number> | undefined; // one count for totalCount and boundedCount alike
  const exactTotal = () => {
    const p = planned();
    return (total ??= count(p ? rollupCountSql(p) : deadLetterCountSql(where)));
  };
  return {
    total: exactTotal,
    fromRollups: () => (planned() ? exactTotal : null),
    upTo: async (limit) => {
      if (planned()) return { count: await exactTotal(), exact: true };
      const n = await count(deadLetterCountUpToSql(where, limit));
      return n > limit ? { count: limit, exact: false } : { count: n, exact: true };
    },
  };
}

export interface DeadLetterConnectionArgs {
  filter?: Parameters<typeof parseDeadLetterFilter>[0];
  orderBy?: { field: DeadLetterOrderField; direction: 'ASC' | 'DESC' } | null;
  first?: number | null;
  last?: number | null;
  after?: string | null;
  before?: string | null;
}

export interface DeadLetterConnectionPage {
  edges: Edge[];
  pageInfo: { startCursor: string | null; endCursor: string | null; hasNextPage: boolean; hasPreviousPage: boolean };
  counts: Counts;
}

/** One page of `deadLetters` as its resolver returns it, reading only `columns` of each row. */
export async function readDeadLetterConnection(db: Db, args: DeadLetterConnectionArgs, columns: ReadonlySet<DeadLetterColumn>): Promise<DeadLetterConnectionPage> {
  if (args.first != null && args.last != null) throw badUserInput('give first or last, not both', { argument: 'first' });
  const first = pageSize(args.first, 'first');
  const last = pageSize(args.last, 'last');
  const order: Order = { field: args.orderBy?.field ?? 'CREATED_AT', descending: (args.orderBy?.direction ?? 'DESC') === 'DESC' };
  const filter = parseDeadLetterFilter(args.filter);
  const where = deadLetterWhereSql(filter);
  const backward = last !== undefined || (first === undefined && args.before != null);
  const limit = (backward ? last : first) ?? DEFAULT_PAGE_SIZE;
  const cursor = backward ? args.before : args.after;
  const after = cursor != null ? decodeCursor(cursor, order, backward ? 'before' : 'after') : null;
  const scan = { field: order.field, descending: order.descending !== backward, after, limit: limit + 1, columns };
  const { errorText } = filter;
  const counts = countsOf(db, filter, where);
  // In created order, indexes on (column, created_at) serve each filter; other orders have
  // only their own index, where a filter's matches may sit late (see orderedPage.ts).
  const filtered = Object.keys(filter).length > 0;
  const rows = errorText !== undefined
    ? await readErrorTextPage(db, { ...filter, errorText }, scan)
    : filtered && order.field !== 'CREATED_AT'
      ? await readOrderedPage(db, { ...scan, where }, counts.fromRollups())
      : await readDeadLetterPage(db, { ...scan, where });
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  if (backward) page.reverse();
  const edges = page.map((row) => ({ cursor: encodeCursor(order, row), node: row }));
  return {
    edges,
    pageInfo: {
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
      // Per the Relay spec, the far side is only reported when cheap: a cursor on it means
      // there was at least the row it names.
      hasNextPage: backward ? cursor != null : more,
      hasPreviousPage: backward ? more : cursor != null,
    },
    counts,
  };
}

builder.queryFields((t) => ({
  deadLetters: t.connection(
    {
      type: DeadLetterRef,
      description: `Dead letters matching the filter, newest first unless \`orderBy\` says otherwise. Pages hold ${DEFAULT_PAGE_SIZE} by default, at most ${MAX_PAGE_SIZE}; use first/after to go forward or last/before to go back, never first and last together. Cursors are positions in the order (keyset), so pages stay consistent while rows are inserted.`,
      args: {
        filter: t.arg({ type: DeadLetterFilterInput }),
        orderBy: t.arg({ type: DeadLetterOrderInput, description: 'Defaults to CREATED_AT DESC.' }),
      },
      resolve: (_root, args, ctx, info) => readDeadLetterConnection(ctx.db, args, deadLetterColumnsSelected(info)),
    },
    {
      name: 'DeadLetterConnection',
      fields: (c) => ({
        totalCount: c.int({
          description:
            'Rows matching the filter (all pages). Counted only when selected: summed from the hourly rollups when the filter uses only statuses, eventTypes, queues, errorKinds and createdAt (partial hours at the range ends are counted from the table), otherwise an exact count(*), which reads every matching row: see boundedCount.',
          resolve: (conn) => (conn as unknown as DeadLetterConnectionPage).counts.total(),
        }),
        boundedCount: c.field({
          type: BoundedCountRef,
          description: `Rows matching the filter, counted up to \`limit\` (default ${DEFAULT_COUNT_LIMIT.toLocaleString('en')}, at most ${MAX_COUNT_LIMIT.toLocaleString('en')}) for filters the rollups cannot answer (error text, payload, sources…), so its cost stays bounded however many rows match. Exact (from the rollups) whenever totalCount would come from them.`,
          args: { limit: c.arg.int({ required: true, defaultValue: DEFAULT_COUNT_LIMIT }) },
          resolve: (conn, args) => countUpTo((conn as unknown as DeadLetterConnectionPage).counts, args.limit),
        }),
      }),
    },
    { name: 'DeadLetterEdge' },
  ),
}));
