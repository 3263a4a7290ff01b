// The change horizon, as a one-row subquery `h(horizon)` for the change reads: the lowest xid that
// may still be writing to this database, or the snapshot's xmax when none is. Rows stamped below
// it can no longer appear or change under that stamp (a sequence value alone is not commit order).
// xids are cluster-wide, so pg_snapshot_xmin would also wait for long transactions in *other*
// databases; an in-progress xid is skipped only when pg_stat_activity positively shows it running
// in another database (a backend never changes database). Anything unknown — a transaction that
// ended after the snapshot, a prepared transaction, a row hidden from this role — counts as ours.
// pg_current_snapshot() is the statement's own snapshot, the one the rows are read with.
export const CHANGE_HORIZON_SQL = `(
  select coalesce(
           (select min(x)
              from pg_snapshot_xip(s.snap) x
             where not exists (
                     select 1 from pg_stat_activity a
                      where a.backend_xid::text = (x::text::numeric % 4294967296)::text
                        and a.datid is distinct from (select oid from pg_database where datname = current_database()))),
           pg_snapshot_xmax(s.snap)) as horizon
    from (select pg_current_snapshot() as snap) s)`;
