-- Coalesced change hints (issue 36 item 4): single-row producers no longer queue behind each other's
-- NOTIFY.
--
-- Why: PostgreSQL takes a cluster-wide lock before the commit record of any transaction that sent a
-- NOTIFY and holds it until that commit is flushed, so hinted commits cannot share a WAL flush. With
-- a hint in every transaction, 16 connections of single-row INSERTs ran at 1,211 inserts/s against
-- 2,414 with hints off (pgbench, docs/live-feed.md "Coalesced hints").
--
-- What: a statement sends its hint only when no other open transaction of this database holds one
-- that is not yet committed. The first takes a transaction-scoped advisory lock (the two-key form,
-- so it cannot meet a one-key lock such as Prisma Migrate's); a statement of another transaction that
-- finds it taken sends none. Nothing is missed, only read at another moment: the change feed reads
-- by cursor, at the holder's hint (delivered at its commit), in its trailing reads after every hint
-- (5 ms doubling to 250 ms: for the writers that skipped and committed meanwhile), and every
-- LIVE_POLL_MS. A writer alone, the usual case outside bursts, always hints. A holder that stays
-- open long after its statement delays the others' rows until it ends, or until the poll.
-- The pending-queue threshold and lazarus.change_hints = 'off' (20261202100000) apply as before;
-- lazarus.change_hints = 'each' sends every transaction's hint, as before (a tighter tail for fewer
-- writers: docs/live-feed.md).
--
-- The two hint functions of dead letters and their attempts and tombstones are redefined with only
-- that turn added to their condition, taken only when they have something to hint (an UPDATE that
-- changed no row does not). Error group hints (tg_error_groups__hint) keep theirs unconditional:
-- only the service's fold and operators write error_groups, one transaction at a time, and the feed
-- reads on a group hint only for group subscribers, so a fold holding the turn would leave the
-- producers' rows of its whole run to the trailing reads (SSE p99 60-93 ms against 33-38 before,
-- bench:live at 1,000 single-row inserts/s on 16 connections).
CREATE FUNCTION "lazarus_hint_turn"() RETURNS BOOLEAN LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  -- 'each': every transaction hints, as before this migration (a session, role or database setting).
  IF lower(btrim(coalesce(current_setting('lazarus.change_hints', true), ''))) = 'each' THEN
    RETURN true;
  END IF;
  -- 1281450066 is 'LAZR' as an int4; 1: the change hint.
  RETURN pg_try_advisory_xact_lock(1281450066, 1);
END $$;

CREATE OR REPLACE FUNCTION "tg_lazarus__notify"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  hint jsonb;
BEGIN
  IF lazarus_notify_queue_usage() > lazarus_notify_queue_threshold() THEN
    RETURN NULL;
  END IF;
  SELECT jsonb_build_object(
           't', coalesce(TG_ARGV[0], TG_TABLE_NAME),
           'op', lower(TG_OP),
           'n', count(*),
           'max', max(change_id),
           'ids', (SELECT coalesce(jsonb_agg(id), '[]'::jsonb) FROM (SELECT id FROM changed LIMIT 50) firsts))
    INTO hint
    FROM changed
  HAVING count(*) > 0;
  IF hint IS NOT NULL AND lazarus_hint_turn() THEN
    PERFORM pg_notify('lazarus_changes', hint::text);
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "tg_dead_letter_states__update"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  hint jsonb;
BEGIN
  -- Checked first: an UPDATE fires this trigger even when it changes no row, so the update below,
  -- run unconditionally, would fire it again without end. (A count, not EXISTS: for EXISTS the
  -- planner joins the two transition tables in a nested loop, quadratic in the rows updated.)
  IF (SELECT count(*) FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE lazarus_state_unstamped(n, o)) > 0 THEN
    -- The stamp as tg_dead_letter_states__stamp gave it: version and cursor kept if this
    -- transaction had written the row before (its old version carries this transaction's xid), a
    -- step on otherwise, unless the statement took that step itself.
    UPDATE dead_letter_states s
       SET change_id = CASE WHEN o.change_xid = pg_current_xact_id() THEN o.change_id
                            WHEN n.change_xid = pg_current_xact_id() THEN n.change_id ELSE nextval('lazarus_change_seq') END,
           version = CASE WHEN o.change_xid = pg_current_xact_id() THEN o.version
                          WHEN n.change_xid = pg_current_xact_id() THEN n.version ELSE o.version + 1 END,
           change_xid = pg_current_xact_id(),
           updated_at = now(),
           delivery_generation = CASE WHEN o.status = 'SUCCEEDED' AND n.status = 'PENDING' THEN o.delivery_generation + 1
                                      ELSE n.delivery_generation END,
           resolved_at = CASE WHEN n.status IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED') THEN coalesce(n.resolved_at, now()) END,
           resolved_by = CASE WHEN n.status IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED') THEN n.resolved_by END,
           resolution_reason = CASE WHEN n.status IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED') THEN n.resolution_reason END
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE s.id = n.id AND lazarus_state_unstamped(n, o);
  END IF;
  -- The NOTIFY hint (tg_lazarus__notify's) for the rows that carry this transaction's stamp. The
  -- update above gave the others a new change id and hinted them itself: hinting them here too
  -- would name change ids that no longer exist.
  IF lazarus_notify_queue_usage() <= lazarus_notify_queue_threshold() THEN
    SELECT jsonb_build_object(
             't', 'dead_letters', 'op', 'update', 'n', count(*), 'max', max(change_id),
             'ids', (SELECT coalesce(jsonb_agg(id), '[]'::jsonb)
                       FROM (SELECT id FROM new_rows WHERE change_xid = pg_current_xact_id() LIMIT 50) firsts))
      INTO hint
      FROM new_rows
     WHERE change_xid = pg_current_xact_id()
    HAVING count(*) > 0;
    IF hint IS NOT NULL AND lazarus_hint_turn() THEN
      PERFORM pg_notify('lazarus_changes', hint::text);
    END IF;
  END IF;
  RETURN NULL;
END $$;
