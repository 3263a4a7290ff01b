-- The state row's stamp on update moves from a BEFORE UPDATE row trigger into the statements that
-- write the row, with an AFTER UPDATE statement trigger that stamps what a statement left unstamped.
--
-- Why: PostgreSQL locks the old row version before it runs any BEFORE UPDATE row trigger, and
-- WAL-logs the lock (a Heap/LOCK record per update), whatever the trigger does. The claim and the
-- outcome update every delivered event's state row, so the stamp cost two lock records and two
-- PL/pgSQL calls per event: 19% of the retry loop's database CPU (bench:retry:hot-table, the
-- variant without the trigger). The engine's and the operator actions' statements now set the
-- stamp themselves (src/db/sql/stamp.ts):
--   change_id, version: a new cursor position and version + 1, only on the transaction's first
--                       write of the row (change_xid not yet this transaction's), as before;
--   change_xid, updated_at: the transaction's xid, now();
--   resolved_*, delivery_generation: where the statement changes the status class.
--
-- Writers outside Lazarus (psql, a producer's job: `UPDATE dead_letter_states SET status = ...`)
-- get the same result: tg_dead_letter_states__update compares each updated row with its old
-- version and, where the statement did not stamp it as above, stamps it with a second update in
-- the same statement, before the statement returns. What such a writer can see: RETURNING on
-- dead_letter_states shows the row before that second update (the view lazarus_dead_letters
-- returns it after), and the row is written twice.
--
-- The same trigger sends the NOTIFY hint for state updates (tg_dead_letter_states__notify_update
-- goes): it hints the rows the statement stamped, and the second update hints the ones it stamped,
-- so a hint never names a change id that was replaced.
--
-- dead_letters_resolved_check goes: a writer that sets status = 'RESOLVED' alone would fail it
-- before the AFTER trigger could fill resolved_at. The stamp keeps resolved_at in step instead,
-- on insert (the BEFORE INSERT trigger stays: an insert takes no lock for it) and on update.
ALTER TABLE "dead_letter_states" DROP CONSTRAINT "dead_letters_resolved_check";
DROP TRIGGER "tg_dead_letter_states__stamp" ON "dead_letter_states";
CREATE TRIGGER "tg_dead_letter_states__stamp" BEFORE INSERT ON "dead_letter_states"
  FOR EACH ROW EXECUTE FUNCTION "tg_dead_letter_states__stamp"();

-- Whether the update from o to n left the row unstamped: not stamped by this transaction at this
-- time, resolved_* out of step with the status, or reopened from SUCCEEDED without a new delivery
-- generation. (SQL, so PostgreSQL inlines it.)
CREATE FUNCTION "lazarus_state_unstamped"(n "dead_letter_states", o "dead_letter_states") RETURNS boolean
  LANGUAGE sql STABLE AS $$
  SELECT n.change_xid IS DISTINCT FROM pg_current_xact_id()
      OR n.updated_at IS DISTINCT FROM now()
      OR (n.status IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED')) <> (n.resolved_at IS NOT NULL)
      OR (n.status NOT IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED') AND (n.resolved_by IS NOT NULL OR n.resolution_reason IS NOT NULL))
      OR (o.status = 'SUCCEEDED' AND n.status = 'PENDING' AND n.delivery_generation = o.delivery_generation)
$$;

CREATE FUNCTION "tg_dead_letter_states__update"() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF hint IS NOT NULL THEN
      PERFORM pg_notify('lazarus_changes', hint::text);
    END IF;
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER "tg_dead_letter_states__notify_update" ON "dead_letter_states";
CREATE TRIGGER "tg_dead_letter_states__update" AFTER UPDATE ON "dead_letter_states"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letter_states__update"();

-- The wide row's update trigger (a payload edit, a transform, a dimension changed by SQL) stamps
-- the state row it writes, and leaves alone a state row this transaction has stamped already with
-- the copied columns unchanged: an edit-and-retry or a requeuing transform, whose statement
-- requeued the state row, then writes it once instead of twice. The view's write trigger (psql)
-- is left to the statement trigger above.
CREATE OR REPLACE FUNCTION "tg_dead_letters__update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH c AS (
    SELECT s.status, s.attempts, 1 AS n, lazarus_rollup_bucket(d.created_at) AS bucket, d.created_at, d.event_type, d.queue,
           d.error_kind, d.error_group_id,
           lazarus_delta_signature(d.fingerprint, d.error_signature, d.error_stack) AS signature
      FROM new_rows d JOIN dead_letter_states s ON s.id = d.id
    UNION ALL
    SELECT s.status, s.attempts, -1, lazarus_rollup_bucket(d.created_at), d.created_at, d.event_type, d.queue,
           d.error_kind, d.error_group_id, lazarus_delta_signature(d.fingerprint, d.error_signature, d.error_stack)
      FROM old_rows d JOIN dead_letter_states s ON s.id = d.id),
  rollups AS (
    INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
    SELECT bucket, event_type, queue, error_kind, status, sum(n), sum(n * attempts)
      FROM c GROUP BY 1, 2, 3, 4, 5
    HAVING sum(n) <> 0 OR sum(n * attempts) <> 0)
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued,
                                  first_seen, last_seen)
  SELECT error_group_id, event_type, error_kind, signature, bucket, sum(n), sum(n * lazarus_is_unresolved(status)), 0,
         greatest(0, sum(n * lazarus_is_unresolved(status))),
         CASE WHEN sum(n) > 0 THEN min(created_at) END, CASE WHEN sum(n) > 0 THEN max(created_at) END
    FROM c WHERE error_group_id IS NOT NULL
   GROUP BY error_group_id, event_type, error_kind, signature, bucket
  HAVING sum(n) <> 0 OR sum(n * lazarus_is_unresolved(status)) <> 0;
  UPDATE dead_letter_states s
     SET event_type = n.event_type, ordering_key = n.ordering_key, ordering_seq = n.ordering_seq,
         change_id = CASE WHEN s.change_xid = pg_current_xact_id() THEN s.change_id ELSE nextval('lazarus_change_seq') END,
         change_xid = pg_current_xact_id(),
         version = CASE WHEN s.change_xid = pg_current_xact_id() THEN s.version ELSE s.version + 1 END,
         updated_at = now()
    FROM new_rows n
   WHERE s.id = n.id
     AND (s.change_xid IS DISTINCT FROM pg_current_xact_id()
          OR (s.event_type, s.ordering_key, s.ordering_seq) IS DISTINCT FROM (n.event_type, n.ordering_key, n.ordering_seq));
  RETURN NULL;
END $$;
