-- A role, a database or a session can turn the change feed's NOTIFY hints off:
--
--   ALTER ROLE producer SET lazarus.change_hints = 'off';
--
-- Why: PostgreSQL serializes the commits of every transaction that has sent a NOTIFY. The
-- transaction takes a cluster-wide lock before its commit record and holds it until the commit is
-- flushed, so such commits cannot share a WAL flush (no group commit). Many producers inserting
-- one event per transaction then queue behind each other: with 16 connections of single-row
-- INSERTs on the project's machine, 1,250 inserts/s with hints against 2,055 without, and fewer
-- with more connections (docs/scaling.md, "NOTIFY serializes commits"). The app's own NOTIFY users
-- in the same cluster wait in that queue too.
--
-- A transaction of a role with hints off writes its rows, their change stamps and their history as
-- always, and sends no hint. The change feed reads them by cursor at its next read: another
-- writer's hint, or its poll (LIVE_POLL_MS, 1 s by default). Subscribers get every change; only
-- later. Values other than 'off' (any case, spaces ignored) leave hints on.
--
-- Both hint triggers (tg_lazarus__notify and tg_dead_letter_states__update) skip the NOTIFY when
-- the queue's usage is above lazarus_notify_queue_threshold() (20261121150000_notify_pressure);
-- with hints off that threshold is below any usage.
CREATE OR REPLACE FUNCTION "lazarus_notify_queue_threshold"() RETURNS DOUBLE PRECISION LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN lower(btrim(current_setting('lazarus.change_hints', true))) = 'off' THEN -1
              ELSE least(0.5, coalesce(lazarus_setting_fraction('lazarus.notify_queue_threshold'), 0.5)) END;
$$;
