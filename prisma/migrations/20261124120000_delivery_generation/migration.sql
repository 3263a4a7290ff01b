-- A delivery generation per dead letter, for the webhook-id.
--
-- webhook-id is what receivers de-duplicate on (Standard Webhooks). It stays the same across the
-- retries of one delivery, but an event that SUCCEEDED and is then requeued (a forced requeue, a
-- redrive with force, an edit-and-retry) is a new message the receiver has not seen: with the same
-- id, a receiver following the advice would drop it. The generation counts those moves from
-- SUCCEEDED back to PENDING; webhook-id is `<id>` for generation 0 and `<id>.<generation>` after.
-- The stamp trigger counts them, so every way of writing the row (the API, SQL) agrees. Adding a
-- column with a constant default does not rewrite the table.

ALTER TABLE "dead_letters" ADD COLUMN "delivery_generation" INTEGER NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION "tg_dead_letters__stamp"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.change_id := nextval('lazarus_change_seq');
  NEW.change_xid := pg_current_xact_id();
  IF TG_OP = 'UPDATE' THEN
    NEW.version := OLD.version + 1;
    NEW.updated_at := now();
    IF OLD.status = 'SUCCEEDED' AND NEW.status = 'PENDING' THEN
      NEW.delivery_generation := OLD.delivery_generation + 1;
    END IF;
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
END;
$$;
