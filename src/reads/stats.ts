// Stats over the dead letters matching a filter. Each figure runs its own statement only when
// asked for; figures that share a scan share a promise. Counts, the time series, the retry figures
// and top errors read the rollups when the filter allows (db/sql/rollupPlan.ts).
import type { Db } from '../db/createDb.ts';
import { countDeadLettersByStatus, countRolledUpByStatus, type StatusCount } from '../db/sql/countDeadLettersByStatus.ts';
import { blockedKeysSql, type BlockedKeyRow } from '../db/sql/blockedKeys.ts';
import { deadLetterOldestPendingSql, rollupOldestPendingSql, type OldestPendingRow, type RetryStatsRow } from '../db/sql/oldestPending.ts';
import { deadLetterStatsCountsSql, type StatsCountRow } from '../db/sql/deadLetterStatsCounts.ts';
import { deadLetterTimeSeriesSql, type TimeBucketRow } from '../db/sql/deadLetterTimeSeries.ts';
import { deadLetterTopErrorsSql, type TopErrorRow } from '../db/sql/deadLetterTopErrors.ts';
import { deadLetterWhereSql, isEventFilter, type DeadLetterFilter } from '../db/sql/deadLetterWhere.ts';
import { intersectRange, rollupPlan, signatureRollupPlan, type RollupPlan } from '../db/sql/rollupPlan.ts';
import { rollupContributionsSql, rollupStatsCountsSql } from '../db/sql/rollupStatsCounts.ts';
import { rollupTimeSeriesSql } from '../db/sql/rollupTimeSeries.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { runSql } from '../db/runSql.ts';

export type { BlockedKeyRow, StatusCount, TimeBucketRow, TopErrorRow };
export type BucketSize = 'HOUR' | 'DAY';
export const BUCKET_MS: Record<BucketSize, number> = { HOUR: 3_600_000, DAY: 86_400_000 };

/** Dead letters per status among those matching `filter`, from the rollups when the filter allows. */
export function countByStatus(db: Db, filter: DeadLetterFilter): Promise<StatusCount[]> {
  const plan = rollupPlan(filter);
  return plan ? countRolledUpByStatus(db, rollupContributionsSql(plan)) : countDeadLettersByStatus(db, deadLetterWhereSql(filter));
}

export class Stats {
  #counts?: Promise<StatsCountRow[]>;
  #retry?: Promise<RetryStatsRow>;
  readonly db: Db;
  readonly filter: DeadLetterFilter;
  readonly where: Prisma.Sql;
  /** How the rollups answer the filter, or null. */
  readonly plan: RollupPlan | null;
  constructor(db: Db, filter: DeadLetterFilter) {
    this.db = db;
    this.filter = filter;
    this.where = deadLetterWhereSql(filter);
    this.plan = rollupPlan(filter);
  }
  counts() {
    this.#counts ??= runSql<StatsCountRow>(this.db, this.plan ? rollupStatsCountsSql(this.plan) : deadLetterStatsCountsSql(this.where));
    return this.#counts;
  }
  async total() {
    return (await this.counts()).find((r) => r.dimension === 'total')?.count ?? 0;
  }
  /** Counts by one dimension, most first (ties by key). */
  async by(dimension: StatsCountRow['dimension']) {
    const rows = (await this.counts()).filter((r) => r.dimension === dimension);
    return rows.map((r) => ({ key: r.key!, count: r.count })).sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1));
  }
  retry() {
    this.#retry ??= this.#retryFigures();
    return this.#retry;
  }
  /**
   * Outcome counts and attempts from the counts' statement, so the matching rows (or the partial
   * hours, each row with its state row) are read once for both; the oldest PENDING event in a
   * statement of its own.
   */
  async #retryFigures(): Promise<RetryStatsRow> {
    const oldestSql = this.plan ? rollupOldestPendingSql(this.plan, this.where) : deadLetterOldestPendingSql(this.where);
    const [counts, oldest] = await Promise.all([this.counts(), runSql<OldestPendingRow>(this.db, oldestSql)]);
    const status = (key: string) => counts.find((r) => r.dimension === 'status' && r.key === key);
    const { count: succeeded, attempts } = status('SUCCEEDED') ?? { count: 0, attempts: 0 };
    return { ...oldest[0]!, succeeded, exhausted: status('EXHAUSTED')?.count ?? 0, meanAttemptsToSuccess: succeeded ? attempts / succeeded : null };
  }
  topErrors(limit: number) {
    return runSql<TopErrorRow>(this.db, deadLetterTopErrorsSql(this.where, limit, signatureRollupPlan(this.filter, this.plan), isEventFilter(this.filter)));
  }
  /** Created per bucket over [from truncated to its bucket, to), every bucket present. */
  timeSeries(bucket: BucketSize, from: Date, to: Date) {
    const size = BUCKET_MS[bucket];
    const lo = new Date(Math.floor(from.getTime() / size) * size);
    const plan = rollupPlan({ ...this.filter, createdAt: intersectRange(this.filter.createdAt, { from: lo, to }) });
    return runSql<TimeBucketRow>(this.db, plan ? rollupTimeSeriesSql(plan, bucket, lo, to) : deadLetterTimeSeriesSql(this.where, bucket, from, to));
  }
  blockedKeys(limit: number) {
    return runSql<BlockedKeyRow>(this.db, blockedKeysSql(this.where, limit));
  }
}
