-- One version and one change-feed position per transaction and event.
--
-- The state row's stamp gave every UPDATE of it a new version and cursor. A payload edit that also
-- requeues, and a transform batch that requeues, write the state row (status) and the event row
-- (payload) in one statement, and the event row's update trigger (tg_dead_letters__update) then
-- writes the state row again: version went up by 2 for one operator action, so a client that read
-- version v and the change saw v + 2. An UPDATE of lazarus_dead_letters that changes the payload
-- and the status (event row first, then the state row) did the same.
--
-- The stamp now takes a new version and cursor only for the first write of a state row in a
-- transaction (the row's change_xid is not yet this transaction's); later writes in the same
-- transaction keep them. Nothing outside the transaction can see its intermediate states, so each
-- committed change is one version step for optimistic concurrency, and one (change_xid, change_id)
-- position in the live feed: the xid is the transaction's either way, and the feed reads a
-- transaction's rows only once it has ended. The NOTIFY hints are unchanged: every statement still
-- sends one, the later ones name the kept change id, and identical hints in one transaction
-- coalesce. updated_at (now(), the transaction's start), the delivery generation and resolved_*
-- follow every write, as before.
--
-- The fix is here rather than in tg_dead_letters__update (skip its write when this transaction
-- stamped the state row): that covers only the state-then-payload order, not an update through the
-- view, which writes the event row first.
CREATE OR REPLACE FUNCTION "tg_dead_letter_states__stamp"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF OLD.change_xid = pg_current_xact_id() THEN
      NEW.change_id := OLD.change_id;
      NEW.change_xid := OLD.change_xid;
      NEW.version := OLD.version;
    ELSE
      NEW.change_id := nextval('lazarus_change_seq');
      NEW.change_xid := pg_current_xact_id();
      NEW.version := OLD.version + 1;
    END IF;
    NEW.updated_at := now();
    IF OLD.status = 'SUCCEEDED' AND NEW.status = 'PENDING' THEN
      NEW.delivery_generation := OLD.delivery_generation + 1;
    END IF;
  ELSE
    NEW.change_id := nextval('lazarus_change_seq');
    NEW.change_xid := pg_current_xact_id();
  END IF;
  IF NEW.status IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED') THEN
    IF NEW.resolved_at IS NULL THEN
      NEW.resolved_at := now();
    END IF;
  ELSE
    NEW.resolved_at := NULL;
    NEW.resolved_by := NULL;
    NEW.resolution_reason := NULL;
  END IF;
  RETURN NEW;
END $$;
