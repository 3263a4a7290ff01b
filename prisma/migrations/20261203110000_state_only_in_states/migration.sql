-- What a psql user reads in dead_letters is true (issue 32).
--
-- Since 20261126130000_narrow_queue_state the queue state lives in dead_letter_states, but
-- dead_letters kept the state columns a producer may set in its INSERT (status, attempts,
-- next_attempt_at, the lease and resolution) with the values the event was recorded with. So
-- `SELECT status, attempts FROM dead_letters` answered PENDING/0 for an event that had succeeded
-- after nine attempts: silently stale.
--
-- Now those columns are inputs only. They keep their names, so every producer's INSERT that names
-- them (next_attempt_at to delay the first attempt, say) and `INSERT ... ON CONFLICT (dedupe_key)
-- DO NOTHING RETURNING id` keep working. They have no default: an INSERT that does not name them
-- stores NULL, and the statement trigger that creates the state rows uses the old defaults
-- (PENDING, 0 attempts, due now). An INSERT that does name them has them copied into the state row
-- and cleared again by the same statement (one more write of those rows only). Either way the
-- columns always read NULL, and each one's comment names where the state is.
--
-- The old values go without rewriting the table: DROP COLUMN only marks the column dropped, and
-- ADD COLUMN of a nullable column without a default writes nothing, so both take an ACCESS
-- EXCLUSIVE lock for milliseconds (the migrator runs it under a short lock_timeout, retried).
-- The disk space of the dropped values is reused as rows are rewritten, or by VACUUM FULL.
--
-- The view that joins both, for psql users, gets a name that says what it shows:
-- lazarus_dead_letters becomes dead_letters_current. The state table's CHECKs, moved there from
-- dead_letters, get their table's name.

-- Every lock first, in the order producers and readers take them (the view, then dead_letters,
-- then dead_letter_states): taken one by one in the order of the statements below, a producer
-- holding dead_letters and waiting for dead_letter_states deadlocked with this migration
-- (bench:upgrade: 7 of 4,153 inserts aborted). LOCK of a view also locks its tables, in that order.
LOCK TABLE "lazarus_dead_letters" IN ACCESS EXCLUSIVE MODE;

ALTER VIEW "lazarus_dead_letters" RENAME TO "dead_letters_current";
COMMENT ON VIEW "dead_letters_current" IS
  'Every dead letter with its current queue state: the write-once row (dead_letters) joined with its state (dead_letter_states) by id. Read and change state here; producers insert into dead_letters.';
-- The old name, for one release: processes of the previous release read and write through it
-- during a rolling upgrade (a simple view over the view, so inserts, updates and deletes reach its
-- INSTEAD OF trigger). It shows the current state too. A later migration drops it.
CREATE VIEW "lazarus_dead_letters" AS SELECT * FROM "dead_letters_current";
COMMENT ON VIEW "lazarus_dead_letters" IS 'Deprecated name of dead_letters_current, kept for one release for processes of the previous one.';
ALTER FUNCTION "tg_lazarus_dead_letters__write"() RENAME TO "tg_dead_letters_current__write";
ALTER TRIGGER "tg_lazarus_dead_letters__write" ON "dead_letters_current" RENAME TO "tg_dead_letters_current__write";

ALTER TABLE "dead_letter_states" RENAME CONSTRAINT "dead_letters_attempts_check" TO "dead_letter_states_attempts_check";
ALTER TABLE "dead_letter_states" RENAME CONSTRAINT "dead_letters_lease_check" TO "dead_letter_states_lease_check";
ALTER TABLE "dead_letter_states" RENAME CONSTRAINT "dead_letters_pending_due_check" TO "dead_letter_states_pending_due_check";

DROP TRIGGER "tg_dead_letters__inputs_fixed" ON "dead_letters";
ALTER TABLE "dead_letters"
  DROP COLUMN "status", DROP COLUMN "attempts", DROP COLUMN "next_attempt_at",
  DROP COLUMN "lease_owner", DROP COLUMN "lease_token", DROP COLUMN "lease_expires_at",
  DROP COLUMN "resolved_at", DROP COLUMN "resolved_by", DROP COLUMN "resolution_reason";
ALTER TABLE "dead_letters"
  ADD COLUMN "status" "DeadLetterStatus", ADD COLUMN "attempts" INTEGER, ADD COLUMN "next_attempt_at" TIMESTAMPTZ(6),
  ADD COLUMN "lease_owner" TEXT, ADD COLUMN "lease_token" UUID, ADD COLUMN "lease_expires_at" TIMESTAMPTZ(6),
  ADD COLUMN "resolved_at" TIMESTAMPTZ(6), ADD COLUMN "resolved_by" TEXT, ADD COLUMN "resolution_reason" TEXT;

COMMENT ON TABLE "dead_letters" IS
  'What is written once per failed event. Its queue state (status, attempts, next attempt, lease, resolution, version) is in dead_letter_states (same id); the view dead_letters_current shows both.';
COMMENT ON COLUMN "dead_letters"."status" IS 'Input only, always NULL: an INSERT may set the initial status; it is moved to dead_letter_states. Current status: dead_letters_current.status.';
COMMENT ON COLUMN "dead_letters"."attempts" IS 'Input only, always NULL (moved to dead_letter_states on insert). Current: dead_letters_current.attempts.';
COMMENT ON COLUMN "dead_letters"."next_attempt_at" IS 'Input only, always NULL: an INSERT may set the first due time (default now). Current: dead_letters_current.next_attempt_at.';
COMMENT ON COLUMN "dead_letters"."lease_owner" IS 'Input only, always NULL. Current lease: dead_letters_current.';
COMMENT ON COLUMN "dead_letters"."lease_token" IS 'Input only, always NULL. Current lease: dead_letters_current.';
COMMENT ON COLUMN "dead_letters"."lease_expires_at" IS 'Input only, always NULL. Current lease: dead_letters_current.';
COMMENT ON COLUMN "dead_letters"."resolved_at" IS 'Input only, always NULL. Current resolution: dead_letters_current.';
COMMENT ON COLUMN "dead_letters"."resolved_by" IS 'Input only, always NULL. Current resolution: dead_letters_current.';
COMMENT ON COLUMN "dead_letters"."resolution_reason" IS 'Input only, always NULL. Current resolution: dead_letters_current.';

-- Setting a state column of dead_letters later is refused with a message that names where the
-- state is, instead of being ignored. Clearing one (the insert trigger below) is allowed.
CREATE OR REPLACE FUNCTION "tg_dead_letters__inputs_fixed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'dead_letters holds no queue state: change status, attempts, the lease or the resolution in dead_letters_current (or dead_letter_states)'
    USING ERRCODE = 'LZ422';
END $$;
CREATE TRIGGER "tg_dead_letters__inputs_fixed" BEFORE UPDATE OF "status", "attempts", "next_attempt_at",
  "lease_owner", "lease_token", "lease_expires_at", "resolved_at", "resolved_by", "resolution_reason" ON "dead_letters"
  FOR EACH ROW WHEN (NEW."status" IS NOT NULL OR NEW."attempts" IS NOT NULL OR NEW."next_attempt_at" IS NOT NULL
                     OR NEW."lease_owner" IS NOT NULL OR NEW."lease_token" IS NOT NULL OR NEW."lease_expires_at" IS NOT NULL
                     OR NEW."resolved_at" IS NOT NULL OR NEW."resolved_by" IS NOT NULL OR NEW."resolution_reason" IS NOT NULL)
  EXECUTE FUNCTION "tg_dead_letters__inputs_fixed"();

-- The state row, from the inputs or their defaults. It fires after the other insert triggers
-- (triggers of one event fire in name order), which read the inputs too, and then clears the
-- inputs of the rows that had any. `= ANY (array)` keeps that update on the primary key: a join
-- with the transition table could be planned as a scan of dead_letters.
CREATE OR REPLACE FUNCTION "tg_dead_letters__state_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  given BIGINT[];
BEGIN
  INSERT INTO dead_letter_states (id, event_type, ordering_key, ordering_seq, created_at, status, attempts, next_attempt_at,
                                  lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason)
  SELECT id, event_type, ordering_key, ordering_seq, created_at, coalesce(status, 'PENDING'), coalesce(attempts, 0),
         coalesce(next_attempt_at, now()), lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason
    FROM added
  ON CONFLICT (id) DO NOTHING;
  given := ARRAY(SELECT id FROM added
                  WHERE status IS NOT NULL OR attempts IS NOT NULL OR next_attempt_at IS NOT NULL
                     OR lease_owner IS NOT NULL OR lease_token IS NOT NULL OR lease_expires_at IS NOT NULL
                     OR resolved_at IS NOT NULL OR resolved_by IS NOT NULL OR resolution_reason IS NOT NULL);
  IF cardinality(given) > 0 THEN
    UPDATE dead_letters
       SET status = NULL, attempts = NULL, next_attempt_at = NULL, lease_owner = NULL, lease_token = NULL,
           lease_expires_at = NULL, resolved_at = NULL, resolved_by = NULL, resolution_reason = NULL
     WHERE id = ANY (given);
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "tg_dead_letters__rollup_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
  SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, coalesce(status, 'PENDING'), count(*),
         coalesce(sum(attempts), 0)
    FROM new_rows GROUP BY 1, 2, 3, 4, 5;
  INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
  SELECT lazarus_rollup_bucket(created_at), error_signature, event_type, queue, error_kind, count(*)
    FROM new_rows GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "tg_dead_letters__error_groups_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued,
                                  first_seen, last_seen, queues, sources, sample_id)
  SELECT error_group_id, event_type, error_kind,
         lazarus_group_signature(min(fingerprint), min(error_signature), max(error_stack COLLATE "C")), lazarus_rollup_bucket(created_at),
         count(*), sum(lazarus_is_unresolved(coalesce(status, 'PENDING'))), sum(lazarus_is_unresolved(coalesce(status, 'PENDING'))), 0,
         min(created_at), max(created_at), array_agg(DISTINCT queue), array_agg(DISTINCT source), min(id)
    FROM added GROUP BY error_group_id, event_type, error_kind, lazarus_rollup_bucket(created_at);
  RETURN NULL;
END $$;

-- The view's insert and update, under the view's new name (the body is 20261201100000_state_created_at's).
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
    -- The state goes in as inputs too: the insert triggers count the status and attempts, and the
    -- state trigger's row (which then conflicts and is skipped) must pass the state CHECKs.
    INSERT INTO dead_letters (id, event_type, queue, source, ordering_key, ordering_seq, dedupe_key, payload, headers,
                              error_kind, error_message, error_stack, status, attempts, max_attempts, next_attempt_at,
                              lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason,
                              occurred_at, created_at, fingerprint)
    VALUES (NEW.id, NEW.event_type, NEW.queue, NEW.source, NEW.ordering_key, NEW.ordering_seq, NEW.dedupe_key, NEW.payload, NEW.headers,
            NEW.error_kind, NEW.error_message, NEW.error_stack, NEW.status, NEW.attempts, NEW.max_attempts, NEW.next_attempt_at,
            NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at, NEW.resolved_at, NEW.resolved_by, NEW.resolution_reason,
            NEW.occurred_at, NEW.created_at, NEW.fingerprint);
  ELSE
    IF (NEW.event_type, NEW.queue, NEW.source, NEW.ordering_key, NEW.ordering_seq, NEW.dedupe_key, NEW.payload, NEW.headers,
        NEW.error_kind, NEW.error_message, NEW.error_stack, NEW.max_attempts, NEW.occurred_at, NEW.created_at, NEW.fingerprint)
       IS DISTINCT FROM
       (OLD.event_type, OLD.queue, OLD.source, OLD.ordering_key, OLD.ordering_seq, OLD.dedupe_key, OLD.payload, OLD.headers,
        OLD.error_kind, OLD.error_message, OLD.error_stack, OLD.max_attempts, OLD.occurred_at, OLD.created_at, OLD.fingerprint) THEN
      UPDATE dead_letters
         SET event_type = NEW.event_type, queue = NEW.queue, source = NEW.source, ordering_key = NEW.ordering_key,
             ordering_seq = NEW.ordering_seq, dedupe_key = NEW.dedupe_key, payload = NEW.payload, headers = NEW.headers,
             error_kind = NEW.error_kind, error_message = NEW.error_message, error_stack = NEW.error_stack,
             max_attempts = NEW.max_attempts, occurred_at = NEW.occurred_at, created_at = NEW.created_at,
             fingerprint = NEW.fingerprint
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
