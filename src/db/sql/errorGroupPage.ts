// One page of error groups by keyset: (sort key, id) strictly below the cursor, largest first.
// LAST_SEEN, COUNT and UNRESOLVED walk an index on (key, id) backwards (migration
// 20261125130000_error_groups_ledger). TREND walks error_groups_trend_count_idx the same way when
// the folder's trend window is the reader's (migration 20261126110000_error_group_trend: the first
// fold of each hour slides it), and otherwise sums each matching group's hours and sorts them all
// (exact either way; the index walk: 85 → ~30 ms p95 at 10,000 groups, docs/benchmarks.md).
import { Prisma } from '../../generated/prisma/client.ts';
import type { ErrorGroup } from '../../generated/prisma/client.ts';
import type { ErrorGroupStatus, ErrorKind } from '../../generated/prisma/enums.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';

export type ErrorGroupOrderField = 'LAST_SEEN' | 'COUNT' | 'UNRESOLVED' | 'TREND';

/** How far back TREND counts: the events recorded in the last 24 hours. */
export const TREND_HOURS = 24;

export interface ErrorGroupFilterSql {
  ids?: bigint[];
  statuses?: ErrorGroupStatus[];
  eventTypes?: string[];
  errorKinds?: ErrorKind[];
  /** Groups that saw any of these queues (or sources). */
  queues?: string[];
  sources?: string[];
  /** Case-insensitive substring of the signature, as a LIKE pattern already escaped. */
  signatureLike?: string;
  /** The same substring as given, for matching in memory (subscriptions). */
  signatureText?: string;
  lastSeen?: { from?: Date; to?: Date };
}

// Whitelisted SQL for each order; `cast` turns the cursor's text back into the key's type.
const SORT_KEYS: Record<ErrorGroupOrderField, { expr: string; cast: string }> = {
  LAST_SEEN: { expr: 'g.last_seen', cast: 'timestamptz' },
  COUNT: { expr: 'g.total_count', cast: 'bigint' },
  UNRESOLVED: { expr: 'g.unresolved_count', cast: 'bigint' },
  TREND: { expr: 'g.recent_count', cast: 'bigint' },
};
// TREND when error_groups.trend_count counts the reader's window.
const KEPT_TREND = { expr: 'g.trend_count', cast: 'bigint' };

export type ErrorGroupPageRow = ErrorGroup & { recentCount: bigint; sortKey: string };

function whereSql(f: ErrorGroupFilterSql): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  if (f.ids) parts.push(Prisma.sql`g.id = any(${f.ids.map(String)}::bigint[])`);
  if (f.statuses) parts.push(Prisma.sql`g.status::text = any(${f.statuses}::text[])`);
  if (f.eventTypes) parts.push(Prisma.sql`g.event_type = any(${f.eventTypes}::text[])`);
  if (f.errorKinds) parts.push(Prisma.sql`g.error_kind::text = any(${f.errorKinds}::text[])`);
  if (f.queues) parts.push(Prisma.sql`g.queues && ${f.queues}::text[]`);
  if (f.sources) parts.push(Prisma.sql`g.sources && ${f.sources}::text[]`);
  if (f.signatureLike !== undefined) parts.push(Prisma.sql`g.signature ilike ${f.signatureLike}`);
  if (f.lastSeen?.from) parts.push(Prisma.sql`g.last_seen >= ${f.lastSeen.from}::timestamptz`);
  if (f.lastSeen?.to) parts.push(Prisma.sql`g.last_seen < ${f.lastSeen.to}::timestamptz`);
  return parts.length ? Prisma.join(parts, ' and ') : Prisma.sql`true`;
}

const HOUR_MS = 3_600_000;

/** The first hour TREND counts at `now`: its UTC hour and the TREND_HOURS - 1 before it. */
export function trendWindowStart(now: Date): Date {
  return new Date((Math.floor(now.getTime() / HOUR_MS) - (TREND_HOURS - 1)) * HOUR_MS);
}

/** Whether the folder's trend_count counts from `start` (error_group_trend_window). */
async function isTrendWindowAt(db: Db, start: Date): Promise<boolean> {
  const [row] = await runSql<{ start: Date }>(db, Prisma.sql`select start from error_group_trend_window`);
  return row?.start.getTime() === start.getTime();
}

const recentSql = (now: Date) => Prisma.sql`(select coalesce(sum(h.count), 0) from error_group_hours h
  where h.group_id = g.id and h.bucket >= date_trunc('hour', ${now}::timestamptz, 'UTC') - ${TREND_HOURS - 1}::int * interval '1 hour')`;

export interface ErrorGroupPageQuery {
  filter: ErrorGroupFilterSql;
  field: ErrorGroupOrderField;
  after: { key: string; id: bigint } | null;
  limit: number;
  /** The clock TREND counts back from. */
  now: Date;
}

/** Groups in `field` order, descending, ties by id descending; each with its recent count. */
export async function readErrorGroupPage(db: Db, q: ErrorGroupPageQuery): Promise<ErrorGroupPageRow[]> {
  const isKeptTrend = q.field === 'TREND' && (await isTrendWindowAt(db, trendWindowStart(q.now)));
  const sort = isKeptTrend ? KEPT_TREND : SORT_KEYS[q.field];
  const expr = Prisma.raw(sort.expr);
  const after = q.after
    ? Prisma.sql`and (${expr}, g.id) < (${q.after.key}::${Prisma.raw(sort.cast)}, ${q.after.id}::bigint)`
    : Prisma.empty;
  // Only TREND sorts by the recent count, which costs one index range scan per matching group;
  // the other orders count it for the page's rows alone (at 10,000 groups: ~10,000 scans vs 50).
  const page = isKeptTrend
    ? Prisma.sql`select g.*, g.trend_count as recent_count from error_groups g
        where ${whereSql(q.filter)} ${after} order by ${expr} desc, g.id desc limit ${q.limit}::int`
    : q.field === 'TREND'
    ? Prisma.sql`select g.* from (select g.*, ${recentSql(q.now)} as recent_count from error_groups g where ${whereSql(q.filter)}) g
        where true ${after} order by ${expr} desc, g.id desc limit ${q.limit}::int`
    : Prisma.sql`select g.*, null::bigint as recent_count from error_groups g
        where ${whereSql(q.filter)} ${after} order by ${expr} desc, g.id desc limit ${q.limit}::int`;
  // recentCount is a sum of bigints: numeric, a Prisma.Decimal here.
  const rows = await runSql<ErrorGroup & { recentCount: Prisma.Decimal; sortKey: string }>(db, Prisma.sql`
    select g.id, g.event_type as "eventType", g.error_kind::text as "errorKind", g.signature, g.status::text as status,
           g.first_seen as "firstSeen", g.last_seen as "lastSeen", g.total_count as "totalCount",
           g.unresolved_count as "unresolvedCount", g.trend_count as "trendCount", g.queues, g.sources, g.sample_dead_letter_id as "sampleDeadLetterId",
           g.regressed_at as "regressedAt", g.note, g.created_at as "createdAt", g.updated_at as "updatedAt",
           coalesce(g.recent_count, ${recentSql(q.now)}) as "recentCount", ${expr}::text as "sortKey"
      from (${page}) g
     order by ${expr} desc, g.id desc`);
  return rows.map((row) => ({ ...row, recentCount: BigInt(row.recentCount.toFixed()) }));
}

/** How many groups match the filter. */
export async function countErrorGroups(db: Db, filter: ErrorGroupFilterSql): Promise<number> {
  const [row] = await runSql<{ n: number }>(db, Prisma.sql`select count(*)::int as n from error_groups g where ${whereSql(filter)}`);
  return row!.n;
}

export interface HourCount {
  start: Date;
  count: number;
}

/**
 * Events recorded into each group per UTC hour, for the `hours` hours up to `now`'s, zeros
 * included: one statement for a page of groups (the console asks for 50 sparklines at once), an
 * index range on error_group_hours' key per group; the zeros are filled in here. (A join against
 * generate_series let the planner hash the whole table: ~75 ms at a million events.)
 */
export async function readErrorGroupHours(db: Db, groupIds: readonly bigint[], hours: number, now: Date): Promise<Map<bigint, HourCount[]>> {
  const last = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS;
  const first = last - (hours - 1) * HOUR_MS;
  const rows = await runSql<{ groupId: string; start: Date; count: number }>(db, Prisma.sql`
    select h.group_id::text as "groupId", h.bucket as start, h.count::int as count
      from error_group_hours h
     where h.group_id = any(${groupIds.map(String)}::bigint[])
       and h.bucket >= ${new Date(first)}::timestamptz and h.bucket <= ${new Date(last)}::timestamptz`);
  const counts = new Map(rows.map((r) => [`${r.groupId}/${r.start.getTime()}`, r.count]));
  const byGroup = new Map<bigint, HourCount[]>();
  for (const id of groupIds) {
    const series: HourCount[] = [];
    for (let t = first; t <= last; t += HOUR_MS) series.push({ start: new Date(t), count: counts.get(`${id}/${t}`) ?? 0 });
    byGroup.set(id, series);
  }
  return byGroup;
}
