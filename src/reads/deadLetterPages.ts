// Pages of dead letters: keyset paging in any of the four orders, forward or back, with counts
// asked for lazily (from the rollups when the filter allows, else bounded). The strategies per filter
// and order are in db/sql (deadLetterPage, orderedPage, errorTextPage).
import type { Db } from '../db/createDb.ts';
import { runSql } from '../db/runSql.ts';
import { deadLetterCountSql, deadLetterCountUpToSql } from '../db/sql/deadLetterCount.ts';
import { estimateRows } from '../db/sql/estimateRows.ts';
import { readDeadLetterPage, readWindowedPage, STATUS_WALK_STATUSES, type DeadLetterColumn, type DeadLetterOrderField, type DeadLetterPageRow, type PageQuery } from '../db/sql/deadLetterPage.ts';
import { deadLetterWhereSql, isEventFilter, splitByTable, type DeadLetterFilter } from '../db/sql/deadLetterWhere.ts';
import { readErrorTextPage } from '../db/sql/errorTextPage.ts';
import { readOrderedPage } from '../db/sql/orderedPage.ts';
import { rollupCountSql } from '../db/sql/rollupCount.ts';
import { rollupPlan, type RollupPlan } from '../db/sql/rollupPlan.ts';
import type { DeadLetter, Prisma } from '../generated/prisma/client.ts';
import type { DeadLetterStatus } from '../generated/prisma/enums.ts';
import { decodePageCursor, encodePageCursor, PageArgumentError } from './pageCursor.ts';

export type { DeadLetterColumn, DeadLetterOrderField };

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;

export interface BoundedCount {
  count: number;
  exact: boolean;
}

/** What the connection's count fields read: the page's filter, counted when asked. */
export interface Counts {
  total(): Promise<number>;
  upTo(limit: number): Promise<BoundedCount>;
  /** Counts the total when the rollups answer it (cheap); null when they cannot. */
  fromRollups(): (() => Promise<number>) | null;
}

interface Order {
  field: DeadLetterOrderField;
  descending: boolean;
}

export interface Edge {
  cursor: string;
  node: DeadLetter;
}

const orderOf = (order: Order): string[] => [order.field, order.descending ? 'DESC' : 'ASC'];
const TIME_KEY = /^(infinity|[0-9]{4,}-[0-9]{2}-[0-9]{2} [0-9:.]+[+-][0-9:]+)$/;
const ATTEMPTS_KEY = /^-?[0-9]{1,10}$/;

function pageSize(value: number | null | undefined, argument: string): number | undefined {
  if (value == null) return undefined;
  if (value <= 0 || value > MAX_PAGE_SIZE) throw new PageArgumentError(`${argument} must be between 1 and ${MAX_PAGE_SIZE}`, { argument });
  return value;
}

function countsOf(db: Db, filter: DeadLetterFilter, where: Prisma.Sql): Counts {
  const count = async (sql: Prisma.Sql) => (await runSql<{ count: number }>(db, sql))[0]!.count;
  // Made when a count is first asked for: most pages select none.
  let plan: RollupPlan | null | undefined;
  const planned = () => (plan === undefined ? (plan = rollupPlan(filter)) : plan);
  let total: Promise<number> | undefined; // one count for totalCount and boundedCount alike
  const exactTotal = () => {
    const p = planned();
    return (total ??= count(p ? rollupCountSql(p) : deadLetterCountSql(where, isEventFilter(filter))));
  };
  return {
    total: exactTotal,
    fromRollups: () => (planned() ? exactTotal : null),
    upTo: async (limit) => {
      if (planned()) return { count: await exactTotal(), exact: true };
      const n = await count(deadLetterCountUpToSql(where, limit, isEventFilter(filter)));
      return n > limit ? { count: limit, exact: false } : { count: n, exact: true };
    },
  };
}

export interface StatusWalk {
  where: Prisma.Sql;
  statusWalk: NonNullable<PageQuery['statusWalk']>;
}

/**
 * A CREATED_AT page of a filter that names statuses, every one of which can be walked in created
 * order on the state table (see PageQuery.statusWalk): the filter's state part as `where`, and its
 * walk. Undefined for any other filter. With `succeeded`, SUCCEEDED may be among the statuses: its
 * branch is not an index run but the status's rows collected and sorted (readCreatedPage's second
 * step).
 */
export function statusWalkOf(filter: DeadLetterFilter, { succeeded = false } = {}): StatusWalk | undefined {
  const { statuses } = filter;
  const walkable = (status: DeadLetterStatus) => STATUS_WALK_STATUSES.has(status) || (succeeded && status === 'SUCCEEDED');
  if (!statuses?.length || !statuses.every(walkable)) return undefined;
  const { state, event } = splitByTable(filter);
  return { where: deadLetterWhereSql(state), statusWalk: { statuses: [...new Set(statuses)], eventWhere: event && deadLetterWhereSql(event) } };
}

/**
 * A CREATED_AT page. A status filter walks the state table (statusWalkOf), but with a field only
 * dead_letters has the page can be found from either side, and the cheaper is the smaller side:
 *  - that field's (column, created_at) index with a state lookup per row (the view's plan), when
 *    the status is common among its events (PENDING, 40% of the rows, with a signature of 8%:
 *    2.3 ms at 10M rows, against 17 ms walking PENDING on the state table);
 *  - the status's run on the state table with an event probe per row, when the status is rare
 *    (EXHAUSTED events of one queue, older than 27 days of its successes: 15 s the first way, 7.4 ms
 *    this way; docs/benchmarks.md, Session 20).
 * A walk from either side passes, per match, about as many rows as its side has per match, so the
 * side PostgreSQL estimates smaller is walked. PostgreSQL cannot weigh the two in one plan: to it
 * the two rows' created_at are two columns, and said equal in the join, its row estimate collapses.
 */
async function readCreatedPage(db: Db, page: PageQuery, filter: DeadLetterFilter): Promise<DeadLetterPageRow[]> {
  const walk = statusWalkOf(filter);
  if (!walk) return filter.statuses?.includes('SUCCEEDED') ? readSucceededPage(db, page, filter) : readDeadLetterPage(db, page);
  const { eventWhere } = walk.statusWalk;
  if (eventWhere && (await estimateRows(db, 'dead_letters', eventWhere)) < (await estimateRows(db, 'dead_letter_states', walk.where))) {
    return readDeadLetterPage(db, page);
  }
  return readDeadLetterPage(db, { ...page, ...walk });
}

/** Rows of the created index a SUCCEEDED page looks at before it collects the status instead. */
const SUCCEEDED_WINDOW = 2_000;

/**
 * A CREATED_AT page of a filter with SUCCEEDED, which has no (status, created_at) index: keeping it
 * out spares every successful delivery an index entry. Successes are mostly what recent events
 * are, so the page first walks at most SUCCEEDED_WINDOW events in its order. When they do not
 * fill it (the successes are older than the other events: a redrive of last week's incident, and
 * this week's failures since), it collects the status's rows on the state table, through the
 * finished index, and sorts them: time grows with the successes, not with the events newer than
 * them. 150,000 successes older than 150,000 newer failures: 215-304 ms walking, 52 ms collecting
 * (docs/benchmarks.md, Session 22).
 */
async function readSucceededPage(db: Db, page: PageQuery, filter: DeadLetterFilter): Promise<DeadLetterPageRow[]> {
  const windowed = await readWindowedPage(db, page, SUCCEEDED_WINDOW);
  if (windowed.length === page.limit) return windowed;
  const walk = statusWalkOf(filter, { succeeded: true });
  return readDeadLetterPage(db, walk ? { ...page, ...walk } : page);
}

export interface DeadLetterConnectionArgs {
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
export async function readDeadLetterConnection(
  db: Db,
  filter: DeadLetterFilter,
  args: DeadLetterConnectionArgs,
  columns: ReadonlySet<DeadLetterColumn>,
): Promise<DeadLetterConnectionPage> {
  if (args.first != null && args.last != null) throw new PageArgumentError('give first or last, not both', { argument: 'first' });
  const first = pageSize(args.first, 'first');
  const last = pageSize(args.last, 'last');
  const order: Order = { field: args.orderBy?.field ?? 'CREATED_AT', descending: (args.orderBy?.direction ?? 'DESC') === 'DESC' };
  const where = deadLetterWhereSql(filter);
  const backward = last !== undefined || (first === undefined && args.before != null);
  const limit = (backward ? last : first) ?? DEFAULT_PAGE_SIZE;
  const cursor = backward ? args.before : args.after;
  const after = cursor != null ? decodePageCursor(cursor, orderOf(order), order.field === 'ATTEMPTS' ? ATTEMPTS_KEY : TIME_KEY, backward ? 'before' : 'after') : null;
  const scan = { field: order.field, descending: order.descending !== backward, after, limit: limit + 1, columns };
  const { errorText } = filter;
  const counts = countsOf(db, filter, where);
  // In created order, indexes on (column, created_at) serve each filter; other orders have
  // only their own index, where a filter's matches may sit late (see orderedPage.ts).
  const rows = errorText !== undefined
    ? await readErrorTextPage(db, { ...filter, errorText }, scan)
    : order.field === 'CREATED_AT'
      ? await readCreatedPage(db, { ...scan, where }, filter)
      : Object.keys(filter).length > 0
        ? await readOrderedPage(db, { ...scan, where }, counts.fromRollups())
        : await readDeadLetterPage(db, { ...scan, where });
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  if (backward) page.reverse();
  const edges = page.map((row) => ({ cursor: encodePageCursor(orderOf(order), row), node: row }));
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
