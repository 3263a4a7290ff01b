-- Error groups on the main change feed (issue 33, item 5). Until now errorGroupChanged had a feed
-- of its own: tg_error_groups__notify sent a bare NOTIFY lazarus_error_groups, and a second reader
-- polled history ids and error_groups.updated_at (with a 5 s overlap and a memory of counts), with
-- its own coalescer. Now group changes carry the same stamp as dead letters, (change_xid,
-- change_id) from lazarus_change_seq, and the one change feed reads them by cursor like the rest:
--  * error_group_actions rows (every status move: CREATED, STATUS_CHANGED, REGRESSED) are stamped
--    by their column defaults;
--  * error_groups rows are stamped by a row trigger when a group is created or its status or counts
--    move (COUNTS_CHANGED), not when only the trend window slides or a note is written, as before.
-- A resuming subscriber passes its last cursor and gets every group change after it, once.
-- Hints: a statement trigger on error_groups sends the ordinary change hint on lazarus_changes
-- ({"t":"error_groups","op":…,"n":…,"max":…,"ids":[…]}), under the same queue-usage and lazarus.change_hints rules as
-- tg_lazarus__notify; status moves always change the group row in the same transaction, so
-- error_group_actions needs no hint of its own.
--
-- Expand only: nullable columns without a rewrite (defaults set after the columns exist, so rows
-- from before keep NULL stamps and are never read as changes), two indexes on tables that hold one
-- row per group and one per status move, and triggers on error_groups, which only the folder and
-- operators write. dead_letters and its producers are not touched.

ALTER TABLE "error_groups" ADD COLUMN "change_id" BIGINT, ADD COLUMN "change_xid" xid8;
ALTER TABLE "error_group_actions" ADD COLUMN "change_id" BIGINT, ADD COLUMN "change_xid" xid8;
ALTER TABLE "error_group_actions"
  ALTER COLUMN "change_id" SET DEFAULT nextval('lazarus_change_seq'),
  ALTER COLUMN "change_xid" SET DEFAULT pg_current_xact_id();

CREATE INDEX "error_groups_change_cursor_idx" ON "error_groups" ("change_xid", "change_id");
CREATE INDEX "error_group_actions_change_cursor_idx" ON "error_group_actions" ("change_xid", "change_id");

-- Every stamp is new: a group created and counted in one fold keeps the later one, which is still
-- above the cursor of everything read before that fold committed.
CREATE FUNCTION tg_error_groups__stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.change_id := nextval('lazarus_change_seq');
  NEW.change_xid := pg_current_xact_id();
  RETURN NEW;
END $$;

CREATE TRIGGER tg_error_groups__stamp_insert BEFORE INSERT ON "error_groups"
  FOR EACH ROW EXECUTE FUNCTION tg_error_groups__stamp();
CREATE TRIGGER tg_error_groups__stamp_update BEFORE UPDATE ON "error_groups"
  FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status
        OR OLD.total_count IS DISTINCT FROM NEW.total_count
        OR OLD.unresolved_count IS DISTINCT FROM NEW.unresolved_count)
  EXECUTE FUNCTION tg_error_groups__stamp();

-- One hint per statement that stamped a group (the trend slide's UPDATE stamps none, so sends none).
CREATE FUNCTION tg_error_groups__hint() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  hint jsonb;
BEGIN
  IF lazarus_notify_queue_usage() > lazarus_notify_queue_threshold() THEN
    RETURN NULL;
  END IF;
  -- The same shape as tg_lazarus__notify's hints, for anyone else LISTENing on lazarus_changes.
  SELECT jsonb_build_object(
           't', 'error_groups',
           'op', lower(TG_OP),
           'n', count(*),
           'max', max(change_id),
           'ids', (SELECT coalesce(jsonb_agg(id), '[]'::jsonb)
                     FROM (SELECT id FROM changed WHERE change_xid = pg_current_xact_id() LIMIT 50) firsts))
    INTO hint
    FROM changed
   WHERE change_xid = pg_current_xact_id()
  HAVING count(*) > 0;
  IF hint IS NOT NULL THEN
    PERFORM pg_notify('lazarus_changes', hint::text);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER tg_error_groups__hint_insert AFTER INSERT ON "error_groups"
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION tg_error_groups__hint();
CREATE TRIGGER tg_error_groups__hint_update AFTER UPDATE ON "error_groups"
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION tg_error_groups__hint();

-- The second channel retires.
DROP TRIGGER tg_error_groups__notify ON "error_groups";
DROP FUNCTION tg_error_groups__notify();
