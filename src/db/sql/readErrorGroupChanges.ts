// What the errorGroupChanged subscription polls: history rows after a cursor (status moves, with
// the group as it is now) and groups updated since a moment (count changes).
import { Prisma } from '../../generated/prisma/client.ts';
import type { ErrorGroup } from '../../generated/prisma/client.ts';
import type { ErrorGroupStatus } from '../../generated/prisma/enums.ts';
import { queryPg, toBigInts, type Db } from '../createDb.ts';

export interface ErrorGroupActionChange {
  actionId: bigint;
  fromStatus: ErrorGroupStatus | null;
  toStatus: ErrorGroupStatus;
  reason: string | null;
  groupId: bigint;
}

const GROUP_COLUMNS = Prisma.raw(`g.id, g.event_type as "eventType", g.error_kind::text as "errorKind", g.signature, g.status::text as status,
  g.first_seen as "firstSeen", g.last_seen as "lastSeen", g.total_count as "totalCount", g.unresolved_count as "unresolvedCount",
  g.trend_count as "trendCount", g.queues, g.sources, g.sample_dead_letter_id as "sampleDeadLetterId", g.regressed_at as "regressedAt", g.note,
  g.created_at as "createdAt", g.updated_at as "updatedAt"`);

const GROUP_BIGINTS = ['id', 'totalCount', 'unresolvedCount', 'trendCount', 'sampleDeadLetterId'];

/** History rows with id above `afterId`, oldest first, at most `limit`. */
export async function readErrorGroupActionsAfter(db: Db, afterId: bigint, limit: number): Promise<ErrorGroupActionChange[]> {
  const rows = await queryPg<Record<string, unknown>>(db, Prisma.sql`
    select a.id as "actionId", a.from_status::text as "fromStatus", a.to_status::text as "toStatus", a.reason, a.group_id as "groupId"
      from error_group_actions a where a.id > ${afterId}::bigint order by a.id limit ${limit}::int`);
  return rows.map((row) => toBigInts<ErrorGroupActionChange>(row, ['actionId', 'groupId']));
}

/** The newest history id (0 when none). */
export async function readLastErrorGroupActionId(db: Db): Promise<bigint> {
  const [row] = await queryPg<{ id: string | null }>(db, Prisma.sql`select max(id)::text as id from error_group_actions`);
  return BigInt(row?.id ?? 0);
}

/** Groups updated at or after `since` (error_groups_updated_at_idx), or with these ids. */
export async function readErrorGroupsUpdatedSince(db: Db, since: Date, ids: readonly bigint[]): Promise<ErrorGroup[]> {
  const rows = await queryPg<Record<string, unknown>>(db, Prisma.sql`
    select ${GROUP_COLUMNS} from error_groups g
     where g.updated_at >= ${since}::timestamptz or g.id = any(${ids.map(String)}::bigint[])`);
  return rows.map((row) => toBigInts<ErrorGroup>(row, GROUP_BIGINTS));
}
