import { Prisma } from '../../generated/prisma/client.ts';

/**
 * The stamp of a state row `row` (the alias in an `update dead_letter_states row set ...`), set by
 * the statement itself: a new change-feed position and version + 1 on the transaction's first
 * write of the row, kept on a later one (one version step and one feed position per transaction);
 * the transaction's xid; updated_at. A statement that leaves it out is stamped again by
 * tg_dead_letter_states__update, a second write of every row (migration 20261130100000).
 */
export const stamp = (row: string): Prisma.Sql =>
  Prisma.raw(`change_id = case when ${row}.change_xid = pg_current_xact_id() then ${row}.change_id else nextval('lazarus_change_seq') end,
             change_xid = pg_current_xact_id(),
             version = case when ${row}.change_xid = pg_current_xact_id() then ${row}.version else ${row}.version + 1 end,
             updated_at = now()`);

/**
 * The stamp of a state row the statement makes PENDING from any status: its resolution cleared,
 * and its delivery generation a step on when it had SUCCEEDED (a new delivery of a delivered event).
 */
export const reopenStamp = (row: string): Prisma.Sql =>
  Prisma.sql`${stamp(row)},
             resolved_at = null, resolved_by = null, resolution_reason = null,
             delivery_generation = ${Prisma.raw(`${row}.delivery_generation + (${row}.status = 'SUCCEEDED')::int`)}`;
