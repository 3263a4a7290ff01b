-- Broker bridges in (issue 34): where an event came from, and which bridges an operator paused.
--
-- dead_letters.origin holds an event's source coordinates, so that it can be sent back where it came
-- from later: the broker kind and the place in it, e.g. for RabbitMQ
--   {"kind": "amqp", "bridge": "orders", "vhost": "/", "queue": "orders", "exchange": "orders", "routingKeys": ["order.placed"]}
-- (docs/brokers.md lists the shape of every kind). It is an event column: written with the row, never
-- changed afterwards (a trigger refuses a change), and NULL for events recorded without one.
--
-- Expand only (docs/migrations.md): a nullable column without a default writes nothing, so
-- dead_letters' ACCESS EXCLUSIVE lock is held for milliseconds. Its CHECK is added NOT VALID, which
-- skips the scan of existing rows (all NULL, so there is nothing to find); new rows are checked.

-- Every lock first, in the order producers and readers take them: the view, then its tables
-- (LOCK of a view locks the tables it reads, in that order; see 20261203110000_state_only_in_states).
LOCK TABLE "dead_letters_current" IN ACCESS EXCLUSIVE MODE;

ALTER TABLE "dead_letters" ADD COLUMN "origin" JSONB;
-- An object naming its kind the way target kinds are named; 8 KiB holds a queue, an exchange and
-- hundreds of routing keys.
ALTER TABLE "dead_letters" ADD CONSTRAINT "dead_letters_origin_check" CHECK (
  "origin" IS NULL OR (
    jsonb_typeof("origin") = 'object'
    AND coalesce(jsonb_typeof("origin" -> 'kind') = 'string' AND "origin" ->> 'kind' ~ '^[a-z][a-z0-9_]{0,39}$', false)
    AND octet_length("origin"::text) <= 8192)) NOT VALID;
COMMENT ON COLUMN "dead_letters"."origin" IS
  'Source coordinates of an event taken in by a broker bridge ({"kind": "amqp"|"nats"|"redis", ...}, docs/brokers.md), or NULL. Written once.';

CREATE FUNCTION "tg_dead_letters__origin_fixed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'dead_letters.origin is written once, with the event: record a new event to change where it came from'
    USING ERRCODE = 'LZ422';
END $$;
CREATE TRIGGER "tg_dead_letters__origin_fixed" BEFORE UPDATE OF "origin" ON "dead_letters"
  FOR EACH ROW WHEN (OLD."origin" IS DISTINCT FROM NEW."origin")
  EXECUTE FUNCTION "tg_dead_letters__origin_fixed"();

-- The view shows it, appended (CREATE OR REPLACE VIEW may only add columns at the end). The
-- deprecated alias lazarus_dead_letters keeps its columns: processes of the previous release read and
-- write through it and do not know origin; its inserts reach the trigger below with origin NULL.
CREATE OR REPLACE VIEW "dead_letters_current" AS
 SELECT d.id, d.event_type, d.queue, d.source, d.ordering_key, d.ordering_seq, d.dedupe_key, d.payload, d.headers,
        d.error_kind, d.error_message, d.error_stack, s.status, s.attempts, d.max_attempts, s.next_attempt_at,
        s.lease_owner, s.lease_token, s.lease_expires_at, s.resolved_at, s.resolved_by, s.resolution_reason,
        d.occurred_at, d.created_at, s.updated_at, s.version, s.change_id, s.change_xid, d.error_signature,
        s.delivery_generation, d.fingerprint, d.error_group_id, d.origin
   FROM dead_letters d
   JOIN dead_letter_states s ON s.id = d.id;

-- The view's insert and update carry origin (the body is 20261203110000_state_only_in_states' plus
-- origin); a change to it reaches dead_letters, whose trigger above refuses it.
CREATE OR REPLACE FUNCTION "tg_dead_letters_current__write"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    DELETE FROM dead_letters WHERE id = OLD.id;
    RETURN OLD;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO dead_letter_states (id, event_type, ordering_key, ordering_seq, created_at, status, attempts, next_attempt_at,
                                    lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason,
                                    updated_at, delivery_generation)
    VALUES (NEW.id, NEW.event_type, NEW.ordering_key, NEW.ordering_seq, NEW.created_at, NEW.status, NEW.attempts, NEW.next_attempt_at,
            NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at, NEW.resolved_at, NEW.resolved_by, NEW.resolution_reason,
            coalesce(NEW.updated_at, now()), NEW.delivery_generation);
    INSERT INTO dead_letters (id, event_type, queue, source, ordering_key, ordering_seq, dedupe_key, payload, headers,
                              error_kind, error_message, error_stack, status, attempts, max_attempts, next_attempt_at,
                              lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason,
                              occurred_at, created_at, fingerprint, origin)
    VALUES (NEW.id, NEW.event_type, NEW.queue, NEW.source, NEW.ordering_key, NEW.ordering_seq, NEW.dedupe_key, NEW.payload, NEW.headers,
            NEW.error_kind, NEW.error_message, NEW.error_stack, NEW.status, NEW.attempts, NEW.max_attempts, NEW.next_attempt_at,
            NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at, NEW.resolved_at, NEW.resolved_by, NEW.resolution_reason,
            NEW.occurred_at, NEW.created_at, NEW.fingerprint, NEW.origin);
  ELSE
    IF (NEW.event_type, NEW.queue, NEW.source, NEW.ordering_key, NEW.ordering_seq, NEW.dedupe_key, NEW.payload, NEW.headers,
        NEW.error_kind, NEW.error_message, NEW.error_stack, NEW.max_attempts, NEW.occurred_at, NEW.created_at, NEW.fingerprint,
        NEW.origin)
       IS DISTINCT FROM
       (OLD.event_type, OLD.queue, OLD.source, OLD.ordering_key, OLD.ordering_seq, OLD.dedupe_key, OLD.payload, OLD.headers,
        OLD.error_kind, OLD.error_message, OLD.error_stack, OLD.max_attempts, OLD.occurred_at, OLD.created_at, OLD.fingerprint,
        OLD.origin) THEN
      UPDATE dead_letters
         SET event_type = NEW.event_type, queue = NEW.queue, source = NEW.source, ordering_key = NEW.ordering_key,
             ordering_seq = NEW.ordering_seq, dedupe_key = NEW.dedupe_key, payload = NEW.payload, headers = NEW.headers,
             error_kind = NEW.error_kind, error_message = NEW.error_message, error_stack = NEW.error_stack,
             max_attempts = NEW.max_attempts, occurred_at = NEW.occurred_at, created_at = NEW.created_at,
             fingerprint = NEW.fingerprint, origin = NEW.origin
       WHERE id = OLD.id;
    END IF;
    IF (NEW.status, NEW.attempts, NEW.next_attempt_at, NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at,
        NEW.resolved_at, NEW.resolved_by, NEW.resolution_reason, NEW.delivery_generation)
       IS DISTINCT FROM
       (OLD.status, OLD.attempts, OLD.next_attempt_at, OLD.lease_owner, OLD.lease_token, OLD.lease_expires_at,
        OLD.resolved_at, OLD.resolved_by, OLD.resolution_reason, OLD.delivery_generation) THEN
      UPDATE dead_letter_states
         SET status = NEW.status, attempts = NEW.attempts, next_attempt_at = NEW.next_attempt_at,
             lease_owner = NEW.lease_owner, lease_token = NEW.lease_token, lease_expires_at = NEW.lease_expires_at,
             resolved_at = NEW.resolved_at, resolved_by = NEW.resolved_by, resolution_reason = NEW.resolution_reason,
             delivery_generation = NEW.delivery_generation
       WHERE id = OLD.id;
    END IF;
  END IF;
  SELECT * INTO NEW FROM dead_letters_current WHERE id = NEW.id;
  RETURN NEW;
END $$;

-- A bridge an operator paused stays paused across restarts and on every instance. Bridges themselves
-- are declared in configuration (LAZARUS_BRIDGES), not here: a row only says "paused", by whom and when.
CREATE TABLE "bridge_states" (
  "name"      TEXT PRIMARY KEY CHECK ("name" ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$'),
  "paused"    BOOLEAN NOT NULL DEFAULT false,
  "paused_by" TEXT,
  "paused_at" TIMESTAMPTZ(6),
  "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  CONSTRAINT "bridge_states_paused_check" CHECK ("paused" = ("paused_at" IS NOT NULL))
);
COMMENT ON TABLE "bridge_states" IS 'Operator state of the broker bridges declared in LAZARUS_BRIDGES: paused or not (pauseBridge/resumeBridge).';
