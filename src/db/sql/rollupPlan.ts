// Which filters the stats rollups (migration 20261121160000_stats_rollups) can answer, and how.
// Rollups hold counts per UTC hour of created_at, event type, queue, error kind and status, so a
// filter qualifies when it uses only those dimensions (and createdAt); the partial hours at the
// ends of a createdAt range are scanned, or their hours taken whole less the rows outside the
// range. Anything else falls back to scanning dead_letters. The signature rollups
// (20261122130000) hold the same dimensions but status, plus the error signature.
import { Prisma } from '../../generated/prisma/client.ts';
import { deadLetterWhereSql, isEventFilter, type DeadLetterFilter, type TimeRange } from './deadLetterWhere.ts';

const HOUR_MS = 3_600_000;
const ROLLED_UP: ReadonlySet<string> = new Set(['statuses', 'eventTypes', 'queues', 'errorKinds', 'createdAt']);

const floorHour = (d: Date) => new Date(Math.floor(d.getTime() / HOUR_MS) * HOUR_MS);
const ceilHour = (d: Date) => new Date(Math.ceil(d.getTime() / HOUR_MS) * HOUR_MS);

/**
 * A partial hour at an end of the createdAt range. Its rows in the range can be read directly
 * (`where`), or the hour can be taken whole from the rollups (`hour`) less its rows outside the
 * range (`rest`). Both are exact; `isRestSmaller` says which reads fewer rows, judged by time.
 * For the status counts each row read costs a lookup of its state row (10-30 us at 10M rows, whose
 * hour holds 13,889 rows), so reading the shorter side reads at most half an hour of them.
 */
export interface PartialHour {
  /** The range's rows in the hour, over `dead_letters_current d`. */
  where: Prisma.Sql;
  /** The hour's rows before or after the range, over `d`. */
  rest: Prisma.Sql;
  /** The hour's rollups, over `r`. */
  hour: Prisma.Sql;
  isRestSmaller: boolean;
}

/**
 * How to count the rows matching a filter from the rollups: `rollupWhere` (over
 * `dead_letter_rollups r`) selects the whole hours, and each of `edges` a partial hour at either
 * end of the createdAt range (an index range of at most an hour each). Summing both gives exactly
 * the rows the filter matches.
 */
export interface RollupPlan {
  rollupWhere: Prisma.Sql;
  edges: PartialHour[];
  /** The filter reads a state field (statuses), so its partial hours' rows are read with their state rows. */
  readsState: boolean;
}

/**
 * The rollup plan for a filter, or null when the rollups cannot answer it: the filter uses a
 * dimension they do not hold, or its createdAt range lies inside a single hour.
 */
export function rollupPlan(filter: DeadLetterFilter): RollupPlan | null {
  for (const [key, value] of Object.entries(filter)) {
    if (value !== undefined && !ROLLED_UP.has(key)) return null;
  }
  const { from, to } = filter.createdAt ?? {};
  const hoursFrom = from && ceilHour(from);
  const hoursTo = to && floorHour(to);
  if (hoursFrom && hoursTo && hoursFrom.getTime() > hoursTo.getTime()) return null;
  const dimensions: Prisma.Sql[] = [];
  if (filter.statuses) dimensions.push(Prisma.sql`r.status = any(${filter.statuses}::"DeadLetterStatus"[])`);
  if (filter.eventTypes) dimensions.push(Prisma.sql`r.event_type = any(${filter.eventTypes}::text[])`);
  if (filter.queues) dimensions.push(Prisma.sql`r.queue = any(${filter.queues}::text[])`);
  if (filter.errorKinds) dimensions.push(Prisma.sql`r.error_kind = any(${filter.errorKinds}::"ErrorKind"[])`);
  const rows = (range: TimeRange) => deadLetterWhereSql({ ...filter, createdAt: range });
  const partialHour = (inRange: TimeRange, rest: TimeRange, hour: Date): PartialHour => ({
    where: rows(inRange),
    rest: rows(rest),
    hour: Prisma.join([...dimensions, Prisma.sql`r.bucket = ${hour}::timestamptz`], ' and '),
    isRestSmaller: rest.to!.getTime() - rest.from!.getTime() < inRange.to!.getTime() - inRange.from!.getTime(),
  });
  const edges: PartialHour[] = [];
  if (from && hoursFrom!.getTime() !== from.getTime()) edges.push(partialHour({ from, to: hoursFrom! }, { from: floorHour(from), to: from }, floorHour(from)));
  if (to && hoursTo!.getTime() !== to.getTime()) edges.push(partialHour({ from: hoursTo!, to }, { from: to, to: ceilHour(to) }, hoursTo!));
  const parts = [...dimensions];
  if (hoursFrom) parts.push(Prisma.sql`r.bucket >= ${hoursFrom}::timestamptz`);
  if (hoursTo) parts.push(Prisma.sql`r.bucket < ${hoursTo}::timestamptz`);
  return { rollupWhere: parts.length ? Prisma.join(parts, ' and ') : Prisma.sql`true`, edges, readsState: !isEventFilter(filter) };
}

/**
 * The rollup plan over dead_letter_signature_rollups, which holds every dimension but status: the
 * filter's rollupPlan `plan`, or null when the filter names statuses.
 */
export function signatureRollupPlan(filter: DeadLetterFilter, plan: RollupPlan | null): RollupPlan | null {
  return filter.statuses === undefined ? plan : null;
}

/** [a, b) ∩ [c, d) for optional ends. */
export function intersectRange(a: TimeRange | undefined, b: TimeRange): TimeRange {
  const later = (x?: Date, y?: Date) => (x && y ? (x > y ? x : y) : (x ?? y));
  const earlier = (x?: Date, y?: Date) => (x && y ? (x < y ? x : y) : (x ?? y));
  return { from: later(a?.from, b.from), to: earlier(a?.to, b.to) };
}
