// One page of dead letters by keyset: (sort key, id) strictly past the cursor, in the requested
// direction. Keyset (not OFFSET) keeps pages stable while rows are inserted: a cursor names a
// position in the order, not a row count.
import { Prisma } from '../../generated/prisma/client.ts';
import type { DeadLetter } from '../../generated/prisma/client.ts';
import { DeadLetterStatus } from '../../generated/prisma/enums.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { statusSql } from './deadLetterWhere.ts';
import { integerLiteral } from './integerLiteral.ts';

export type DeadLetterOrderField = 'CREATED_AT' | 'UPDATED_AT' | 'NEXT_ATTEMPT_AT' | 'ATTEMPTS';

// Whitelisted SQL for each order; `cast` turns the cursor's text back into the key's type.
const SORT_KEYS: Record<DeadLetterOrderField, { expr: string; cast: string }> = {
  CREATED_AT: { expr: 'd.created_at', cast: 'timestamptz' },
  UPDATED_AT: { expr: 'd.updated_at', cast: 'timestamptz' },
  // Matches the expression index of the read-side migration; rows with no next attempt sort last.
  NEXT_ATTEMPT_AT: { expr: "coalesce(d.next_attempt_at, 'infinity'::timestamptz)", cast: 'timestamptz' },
  ATTEMPTS: { expr: 'd.attempts', cast: 'int' },
};

export interface PageQuery {
  where: Prisma.Sql;
  field: DeadLetterOrderField;
  /** Direction of the rows as scanned (a backward page scans the reverse order). */
  descending: boolean;
  /** Position to start strictly after, in scan order. */
  after: { key: string; id: bigint } | null;
  limit: number;
  /**
   * Collect the matches first (a MATERIALIZED CTE, so the GIN indexes serve the filter) and sort
   * them, instead of walking the order's index. For filters known to match few rows.
   */
  materialize?: boolean;
  /**
   * Walk at most `rows` rows of the order (past the cursor, matching `where`) and keep those that
   * also match `match`: a bounded look for a condition no index orders, such as error text. A
   * page shorter than `limit` then says nothing about rows beyond the window.
   */
  window?: { rows: number; match: Prisma.Sql };
  /**
   * `where` (and the window's `match`) read only dead_letters' own columns (see isEventFilter) and
   * the order is CREATED_AT: find the page's ids in dead_letters alone and join the state rows of
   * those only. Through the view each row looked at costs a state lookup too. At 10M rows: a window
   * of 2,000 took 67 ms through the view and 9 ms this way; a page of 10,000 known ids 270-480 ms
   * and 49 ms, walking the created index alone (docs/benchmarks.md, Session 15).
   */
  isEventTableOnly?: boolean;
  /**
   * The filter names these statuses and the order is CREATED_AT: find the page's ids in
   * dead_letter_states, one branch per status in created order (an ordered run of its (status,
   * created_at) index, unless PostgreSQL finds a cheaper way to the branch's rows), merged, and
   * join the view for those rows only. `where` then holds only the filter's fields the state row
   * has (splitByTable), and `eventWhere` the rest, over dead_letters: a semi-join on id, probed per
   * walked row or collected once, as PostgreSQL's estimates find cheaper (whether to walk this side
   * at all is readCreatedPage's choice, in reads/). Through the view, a page of a status that
   * is rare among recent events walked the created index over every other event, with a state
   * lookup each: 1.4 s at 1M rows where EXHAUSTED events were 1% and older than the newest 27 days
   * (docs/benchmarks.md, Session 19), and the same with a queue (Session 20). See
   * STATUS_WALK_STATUSES for the statuses it serves.
   */
  statusWalk?: { statuses: readonly DeadLetterStatus[]; eventWhere: Prisma.Sql | null };
  /**
   * Collect at most `cap` + 1 matches as (id, sort key) alone, keep the page's worth in order, and
   * read only those rows: for a filter whose matches are few but sit late in the order. Each row
   * then also carries `matched`, the matches collected; above `cap` the page is incomplete.
   */
  collect?: { cap: number };
  /**
   * Which columns to read, besides id and the sort key; the rows lack the others. Default: all.
   * Reading only what the page shows is most of the statement's cost at 50 rows: each text and
   * timestamp value is decoded in JS (the full row took 0.40 ms a page, 7 columns 0.24 ms).
   */
  columns?: ReadonlySet<DeadLetterColumn>;
}

/**
 * A page's row: a dead letter (only the columns asked for) with `sortKey`, PostgreSQL's text of its
 * position in the page's order. The key is text, not a Date, because a Date keeps milliseconds and
 * a cursor must name the exact microsecond.
 */
export type DeadLetterPageRow = DeadLetter & { sortKey: string };

// Each column under the name Prisma gives it, in a fixed order, so a set of columns always makes
// the same text.
const COLUMNS = {
  id: 'd.id',
  eventType: 'd.event_type',
  queue: 'd.queue',
  source: 'd.source',
  orderingKey: 'd.ordering_key',
  orderingSeq: 'd.ordering_seq',
  dedupeKey: 'd.dedupe_key',
  payload: 'd.payload',
  headers: 'd.headers',
  origin: 'd.origin',
  errorKind: 'd.error_kind',
  errorMessage: 'd.error_message',
  errorStack: 'd.error_stack',
  errorSignature: 'd.error_signature',
  fingerprint: 'd.fingerprint',
  errorGroupId: 'd.error_group_id',
  status: 'd.status',
  attempts: 'd.attempts',
  maxAttempts: 'd.max_attempts',
  nextAttemptAt: 'd.next_attempt_at',
  leaseOwner: 'd.lease_owner',
  leaseToken: 'd.lease_token::text',
  leaseExpiresAt: 'd.lease_expires_at',
  resolvedAt: 'd.resolved_at',
  resolvedBy: 'd.resolved_by',
  resolutionReason: 'd.resolution_reason',
  occurredAt: 'd.occurred_at',
  createdAt: 'd.created_at',
  updatedAt: 'd.updated_at',
  version: 'd.version',
  deliveryGeneration: 'd.delivery_generation',
  changeId: 'd.change_id',
} as const satisfies Record<keyof DeadLetter, string>;

export type DeadLetterColumn = keyof typeof COLUMNS;

function selectList(columns: ReadonlySet<DeadLetterColumn> | undefined, field: DeadLetterOrderField): string {
  const list = Object.entries(COLUMNS)
    .filter(([name]) => name === 'id' || !columns || columns.has(name as DeadLetterColumn))
    .map(([name, sql]) => `${sql} as "${name}"`);
  return [...list, `(${SORT_KEYS[field].expr})::text as "sortKey"`].join(', ');
}

// Limits are written into the text: our own integers, never a client's text. A statement without
// parameters goes to PostgreSQL as one simple query, which for a page without a filter was
// ~0.03 ms of ~0.35 ms.
const count = (n: number) => integerLiteral(n, 0, 'a row count');

export function deadLetterPageSql(q: PageQuery): Prisma.Sql {
  const key = SORT_KEYS[q.field];
  const expr = Prisma.raw(key.expr);
  const dir = Prisma.raw(q.descending ? 'desc' : 'asc');
  const past = q.after
    ? Prisma.sql`(${expr}, d.id) ${Prisma.raw(q.descending ? '<' : '>')} (${q.after.key}::${Prisma.raw(key.cast)}, ${q.after.id.toString()}::bigint)`
    : Prisma.sql`true`;
  const order = Prisma.sql`order by ${expr} ${dir}, d.id ${dir}`;
  if (q.collect) {
    return Prisma.sql`
      with m as materialized (select d.id, ${expr} as k from dead_letters_current d where (${q.where}) and ${past} limit ${count(q.collect.cap + 1)}),
           top as (select m.id from m order by m.k ${dir}, m.id ${dir} limit ${count(q.limit)})
      select ${Prisma.raw(selectList(q.columns, q.field))}, (select count(*) from m)::int as "matched"
        from dead_letters_current d join top on top.id = d.id
       ${order}`;
  }
  if (q.statusWalk) {
    if (q.field !== 'CREATED_AT' || q.materialize || q.window) throw new Error('a status walk is a CREATED_AT page of a status filter');
    // One branch per status, each an ordered run of its index (PostgreSQL 15 cannot return an
    // `in (…)` scan in index order), merged by a Merge Append that stops at the page. The status
    // is a literal (statusSql), so PostgreSQL can prove the partial index's predicate.
    const { statuses, eventWhere } = q.statusWalk;
    const events = eventWhere ? Prisma.sql`and d.id in (select d.id from dead_letters d where ${eventWhere})` : Prisma.empty;
    const branches = statuses.map((status) => Prisma.sql`(select d.id, d.created_at from dead_letter_states d
                    where ${statusSql([status])} and (${q.where}) ${events} and ${past} ${order} limit ${count(q.limit)})`);
    return Prisma.sql`
      with top as (select d.id from (${Prisma.join(branches, ' union all ')}) d ${order} limit ${count(q.limit)})
      select ${Prisma.raw(selectList(q.columns, q.field))}
        from dead_letters_current d join top on top.id = d.id
       ${order}`;
  }
  if (q.isEventTableOnly) {
    if (q.field !== 'CREATED_AT' || q.materialize) throw new Error('only a CREATED_AT page without materialize reads dead_letters alone');
    const ids = q.window
      ? Prisma.sql`select d.id from (select d.* from dead_letters d where (${q.where}) and ${past} ${order} limit ${count(q.window.rows)}) d
                    where ${q.window.match} ${order} limit ${count(q.limit)}`
      : Prisma.sql`select d.id from dead_letters d where (${q.where}) and ${past} ${order} limit ${count(q.limit)}`;
    return Prisma.sql`
      with top as (${ids})
      select ${Prisma.raw(selectList(q.columns, q.field))}
        from dead_letters_current d join top on top.id = d.id
       ${order}`;
  }
  if (q.field !== 'CREATED_AT' && !q.materialize) {
    // The order's index leaves PROCESSING rows out (migration 20261128120000_partial_read_indexes):
    // walk it for the others, take the PROCESSING rows (few: the leases held) from the lease
    // index, and let PostgreSQL merge the two in order (a Merge Append that stops at the page).
    // Each branch carries whole rows: merging ids and joining them back to the view took 62 ms
    // for a 2,000-row window at 1M rows, whole rows 1.6 ms.
    const rows = count(q.window ? q.window.rows : q.limit);
    const branch = (status: Prisma.Sql) => Prisma.sql`(select d.* from dead_letters_current d
                    where (${q.where}) and ${past} and ${status} ${order} limit ${rows})`;
    return Prisma.sql`
      select ${Prisma.raw(selectList(q.columns, q.field))}
        from (select d.* from (${branch(Prisma.sql`d.status <> 'PROCESSING'`)} union all ${branch(Prisma.sql`d.status = 'PROCESSING'`)}) d
              ${order} limit ${rows}) d
       ${q.window ? Prisma.sql`where ${q.window.match}` : Prisma.empty}
       ${order}
       limit ${count(q.limit)}`;
  }
  const head = q.materialize ? Prisma.sql`with m as materialized (select * from dead_letters_current d where ${q.where})` : Prisma.empty;
  const from = q.materialize
    ? Prisma.sql`(select * from m) d where ${past}`
    : q.window
      ? Prisma.sql`(select * from dead_letters_current d where (${q.where}) and ${past} ${order} limit ${count(q.window.rows)}) d where ${q.window.match}`
      : Prisma.sql`dead_letters_current d where (${q.where}) and ${past}`;
  return Prisma.sql`${head}
    select ${Prisma.raw(selectList(q.columns, q.field))}
      from ${from}
     ${order}
     limit ${count(q.limit)}`;
}

/**
 * The statuses dead_letter_states_status_created_idx holds (migration 20261201100000_state_created_at),
 * and PROCESSING, whose rows are few (the leases held) and found by the lease index. SUCCEEDED is
 * left out of the index, so that the drain's completions add no entry to it.
 */
export const STATUS_WALK_STATUSES: ReadonlySet<DeadLetterStatus> = new Set<DeadLetterStatus>(
  Object.values(DeadLetterStatus).filter((status) => status !== DeadLetterStatus.SUCCEEDED));

/** One page: the API's most frequent query (runSql runs it on pg, where Prisma's result decoding showed). */
export async function readDeadLetterPage(db: Db, q: PageQuery): Promise<DeadLetterPageRow[]> {
  return runSql<DeadLetterPageRow>(db, deadLetterPageSql(q));
}

/**
 * The page's matches among the first `rows` rows of its order (after its cursor), whatever they
 * match: the first step of a search that collects the matches when they are sparse there
 * (orderedPage.ts, the SUCCEEDED page in reads/deadLetterPages.ts). A full page means done.
 */
export function readWindowedPage(db: Db, q: PageQuery, rows: number): Promise<DeadLetterPageRow[]> {
  return readDeadLetterPage(db, { ...q, where: Prisma.sql`true`, window: { rows, match: q.where } });
}

/** The page `collect` finds (see PageQuery), or null when more than `cap` rows match. */
export async function readCollectedPage(db: Db, q: PageQuery, cap: number): Promise<DeadLetterPageRow[] | null> {
  const rows = await runSql<DeadLetterPageRow & { matched: number }>(db, deadLetterPageSql({ ...q, collect: { cap } }));
  if (rows.length > 0 && rows[0]!.matched > cap) return null;
  return rows.map(({ matched: _, ...row }) => row);
}
