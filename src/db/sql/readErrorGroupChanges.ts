// What the change feed reads for errorGroupChanged (migration 20261207100000_error_groups_on_change_feed):
// status moves (error_group_actions rows, each with its group as it is now) and groups whose counts
// moved in a transaction that recorded no move for them, after a cursor, below the horizon, in
// cursor order. Raw because Prisma cannot compare xid8 or rows. Walks the two change_cursor indexes.
import { Prisma } from '../../generated/prisma/client.ts';
import type { ErrorGroup } from '../../generated/prisma/client.ts';
import type { ErrorGroupStatus } from '../../generated/prisma/enums.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import { CHANGE_HORIZON_SQL } from './changeHorizon.ts';
import type { ChangeRange, ChangeRows } from './readDeadLetterChanges.ts';

export interface ErrorGroupChangeRow {
  changeId: bigint;
  changeXid: string;
  /** True for a status move (a history row); false for a count change. */
  isMove: boolean;
  /** For a move: the status it left (null when the group was created). */
  fromStatus: ErrorGroupStatus | null;
  /** For a move: the reason in its history. */
  reason: string | null;
  group: ErrorGroup;
}

const GROUP_COLUMNS = `g.id, g.event_type as "eventType", g.error_kind::text as "errorKind", g.signature, g.status::text as status,
  g.first_seen as "firstSeen", g.last_seen as "lastSeen", g.total_count as "totalCount", g.unresolved_count as "unresolvedCount",
  g.trend_count as "trendCount", g.queues, g.sources, g.sample_dead_letter_id as "sampleDeadLetterId", g.regressed_at as "regressedAt", g.note,
  g.created_at as "createdAt", g.updated_at as "updatedAt", g.change_id as "groupChangeId"`;

type Row = Omit<ErrorGroup, 'changeId'> & { groupChangeId: bigint | null; horizon: string; changeId: bigint; changeXid: string; isMove: boolean; fromStatus: ErrorGroupStatus | null; reason: string | null };

/** The text is fixed (`$1` xid, `$2` change id, `$3` limit), so it runs prepared like the other change reads. */
export async function readErrorGroupChanges(db: Db, r: ChangeRange): Promise<ChangeRows<ErrorGroupChangeRow>> {
  const [horizon, columns] = [Prisma.raw(CHANGE_HORIZON_SQL), Prisma.raw(GROUP_COLUMNS)];
  const after = Prisma.sql`(${r.afterXid.toString()}::text::xid8, ${r.afterChangeId.toString()}::bigint)`;
  const rows = await runSql<Row>(db, Prisma.sql`
    select h.horizon::text as "horizon", c.*
      from ${horizon} h
      left join lateral (
        select * from (
          (select a.change_id as "changeId", a.change_xid::text as "changeXid", true as "isMove",
                  a.from_status::text as "fromStatus", a.reason, ${columns}
             from error_group_actions a join error_groups g on g.id = a.group_id
            where (a.change_xid, a.change_id) > ${after} and a.change_xid < h.horizon
            order by a.change_xid, a.change_id
            limit ${r.limit}::int)
          union all
          (select g.change_id, g.change_xid::text, false, null, null, ${columns}
             from error_groups g
            where (g.change_xid, g.change_id) > ${after} and g.change_xid < h.horizon
              -- a move in the same transaction carries the group already
              and not exists (select 1 from error_group_actions a where a.group_id = g.id and a.change_xid = g.change_xid)
            order by g.change_xid, g.change_id
            limit ${r.limit}::int)) u
         order by "changeXid"::xid8, "changeId"
         limit ${r.limit}::int) c on true`, { name: 'error_group_changes' });
  return {
    horizon: BigInt(rows[0]!.horizon),
    rows: rows.filter((row) => row.id != null).map(({ horizon: _h, changeId, changeXid, isMove, fromStatus, reason, groupChangeId, ...group }) =>
      ({ changeId, changeXid, isMove, fromStatus, reason, group: { ...group, changeId: groupChangeId } })),
  };
}
