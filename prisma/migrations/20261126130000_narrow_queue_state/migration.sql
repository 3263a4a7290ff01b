-- The narrow queue state (issue 20 item 1; design record in docs/queue-state-split.md).
--
-- Every claim and every outcome used to write a new version of the wide dead_letters row
-- (payload, headers, stack) and re-enter it into all of its indexes: ~68 WAL records per
-- delivered event. The state that changes on every attempt now lives in dead_letter_states, one
-- narrow row per event keyed by the same id; the engine and the operator actions write only it.
--
-- dead_letters stays a real table, because PostgreSQL refuses ON CONFLICT on a view with INSTEAD OF
-- triggers, and `INSERT INTO dead_letters (...) ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`
-- is the producers' contract. Its state columns a producer may set (status, attempts,
-- max_attempts, next_attempt_at, the lease, resolved_*) stay, as insert-time inputs: they hold the
-- state the event was recorded with, and an AFTER INSERT trigger copies them into the state row.
-- They are never changed afterwards (a trigger refuses it, naming the state table), so
-- `SELECT status FROM dead_letters` shows the recorded status; the current one is in
-- dead_letter_states, and the view lazarus_dead_letters joins both under the old column names.
-- max_attempts is written once, so it lives only on dead_letters.
--
-- Columns written on every change (updated_at, version, delivery_generation, change cursor) leave
-- dead_letters. event_type, ordering_key and ordering_seq are copied to the state row, because the
-- claim's due index and the ordering heads' index need them beside the status; they are written
-- once, and kept in step by the trigger that follows an UPDATE of dead_letters.
--
-- No foreign key from the state row to dead_letters: TRUNCATE dead_letters (what tests and
-- operators run) would need CASCADE, and the delete triggers below need the state row while they
-- write rollups, error-group deltas and tombstones, which an ON DELETE CASCADE removes first.
-- Triggers create (insert), follow (update), remove (delete) and truncate it instead.
--
-- For the same reason delivery_attempts loses its foreign key to dead_letters. Its check ran a
-- SELECT ... FOR KEY SHARE of the wide row for every attempt row the engine wrote, so each
-- delivery still locked (wrote the xmax of, and dirtied the page of) the wide row it had just
-- stopped rewriting: docs/benchmarks.md, "Session 14", has the cost. The engine writes an attempt
-- only in the statement that updated the event's state under its lease, and the delete trigger
-- below removes an event's attempts with it, as ON DELETE CASCADE did.

LOCK TABLE "dead_letters" IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE "dead_letter_states" (
    "id" BIGINT NOT NULL,
    "event_type" TEXT NOT NULL,
    "ordering_key" TEXT,
    "ordering_seq" BIGINT,
    "status" "DeadLetterStatus" NOT NULL DEFAULT 'PENDING',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(6) DEFAULT CURRENT_TIMESTAMP,
    "lease_owner" TEXT,
    "lease_token" UUID,
    "lease_expires_at" TIMESTAMPTZ(6),
    "resolved_at" TIMESTAMPTZ(6),
    "resolved_by" TEXT,
    "resolution_reason" TEXT,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "version" INTEGER NOT NULL DEFAULT 0,
    "delivery_generation" INTEGER NOT NULL DEFAULT 0,
    "change_id" BIGINT NOT NULL DEFAULT nextval('lazarus_change_seq'),
    "change_xid" xid8 NOT NULL DEFAULT pg_current_xact_id()
);

-- Existing rows, copied in batches of 50,000 ids so no single statement holds the whole table's
-- rows in memory. The cursor (change_id, change_xid), version and updated_at are copied as they
-- are, so a subscriber's cursor stays valid and nothing is replayed. The copy runs before the
-- state table has triggers or indexes.
DO $$
DECLARE
  lo BIGINT := 0;
  hi BIGINT;
BEGIN
  SELECT coalesce(max(id), 0) INTO hi FROM dead_letters;
  WHILE lo < hi LOOP
    INSERT INTO dead_letter_states (id, event_type, ordering_key, ordering_seq, status, attempts, next_attempt_at,
                                    lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason,
                                    updated_at, version, delivery_generation, change_id, change_xid)
    SELECT id, event_type, ordering_key, ordering_seq, status, attempts, next_attempt_at,
           lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason,
           updated_at, version, delivery_generation, change_id, change_xid
      FROM dead_letters WHERE id > lo AND id <= lo + 50000;
    lo := lo + 50000;
  END LOOP;
END $$;

-- The constraints keep the names they had on dead_letters: producers and tests match on them.
ALTER TABLE "dead_letter_states"
  ADD CONSTRAINT "dead_letter_states_pkey" PRIMARY KEY ("id"),
  ADD CONSTRAINT "dead_letters_attempts_check" CHECK ("attempts" >= 0),
  ADD CONSTRAINT "dead_letters_lease_check" CHECK (
    ("status" = 'PROCESSING') = ("lease_owner" IS NOT NULL AND "lease_token" IS NOT NULL AND "lease_expires_at" IS NOT NULL)
    AND ("status" = 'PROCESSING' OR ("lease_owner" IS NULL AND "lease_token" IS NULL AND "lease_expires_at" IS NULL))),
  ADD CONSTRAINT "dead_letters_pending_due_check" CHECK ("status" <> 'PENDING' OR "next_attempt_at" IS NOT NULL),
  ADD CONSTRAINT "dead_letters_resolved_check" CHECK (("status" IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED')) = ("resolved_at" IS NOT NULL));

-- Only what a query uses (docs/benchmarks.md, "Session 14", has each one's cost):
--  * pending_type: the claim's due scan per type, deliverable types, msUntilNextDue.
--  * lease: expired leases at claim, in-flight counts for concurrency limits.
--  * live_key: the head of an ordering key (claim of ordered types, blocked keys).
--  * finished: retention.
--  * change_cursor: the live feed's catch-up.
--  * status_next_attempt, updated, attempts, next_attempt_order: the read side's filters and orders.
CREATE INDEX "dead_letter_states_pending_type_idx" ON "dead_letter_states" ("event_type", "next_attempt_at", "id") WHERE "status" = 'PENDING';
CREATE INDEX "dead_letter_states_lease_idx" ON "dead_letter_states" ("lease_expires_at") WHERE "status" = 'PROCESSING';
CREATE INDEX "dead_letter_states_live_key_idx"
    ON "dead_letter_states" ("event_type", "ordering_key", (coalesce("ordering_seq", -1)), "id") INCLUDE ("status", "ordering_seq")
 WHERE "ordering_key" IS NOT NULL AND "status" IN ('PENDING', 'PROCESSING', 'EXHAUSTED');
CREATE INDEX "dead_letter_states_finished_idx" ON "dead_letter_states" ("resolved_at") WHERE "status" IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED');
CREATE INDEX "dead_letter_states_change_cursor_idx" ON "dead_letter_states" ("change_xid", "change_id");
CREATE INDEX "dead_letter_states_status_next_attempt_idx" ON "dead_letter_states" ("status", "next_attempt_at", "id");
CREATE INDEX "dead_letter_states_updated_idx" ON "dead_letter_states" ("updated_at", "id");
CREATE INDEX "dead_letter_states_attempts_idx" ON "dead_letter_states" ("attempts", "id");
CREATE INDEX "dead_letter_states_next_attempt_order_idx" ON "dead_letter_states" ((coalesce("next_attempt_at", 'infinity'::timestamptz)), "id");

-- The wide row's triggers that followed the state move to the state table (below) or are
-- replaced by versions that read the state row.
DROP TRIGGER "tg_dead_letters__stamp" ON "dead_letters";
DROP TRIGGER "tg_dead_letters__notify_insert" ON "dead_letters";
DROP TRIGGER "tg_dead_letters__notify_update" ON "dead_letters";
DROP TRIGGER "tg_dead_letters__rollup_update" ON "dead_letters";
DROP TRIGGER "tg_dead_letters__rollup_delete" ON "dead_letters";
DROP TRIGGER "tg_dead_letters__error_groups_update" ON "dead_letters";
DROP TRIGGER "tg_dead_letters__error_groups_delete" ON "dead_letters";
DROP TRIGGER "tg_dead_letters__tombstone" ON "dead_letters";
DROP FUNCTION "tg_dead_letters__stamp"();
DROP FUNCTION "tg_dead_letters__rollup_update"();
DROP FUNCTION "tg_dead_letters__rollup_delete"();
DROP FUNCTION "tg_dead_letters__error_groups_update"();
DROP FUNCTION "tg_dead_letters__error_groups_delete"();
DROP FUNCTION "tg_dead_letters__tombstone"();

ALTER TABLE "delivery_attempts" DROP CONSTRAINT "delivery_attempts_dead_letter_id_fkey";
-- Written once per delivery and read by no query (issue 20 item 3; docs/benchmarks.md, "Session 14").
DROP INDEX "delivery_attempts_finished_idx";

DROP INDEX "dead_letters_pending_type_idx";
DROP INDEX "dead_letters_lease_idx";
DROP INDEX "dead_letters_live_key_idx";
DROP INDEX "dead_letters_finished_idx";
DROP INDEX "dead_letters_status_next_attempt_idx";
DROP INDEX "dead_letters_attempts_idx";
DROP INDEX "dead_letters_next_attempt_order_idx";
ALTER TABLE "dead_letters"
  DROP CONSTRAINT "dead_letters_attempts_check",
  DROP CONSTRAINT "dead_letters_lease_check",
  DROP CONSTRAINT "dead_letters_pending_due_check",
  DROP CONSTRAINT "dead_letters_resolved_check",
  DROP COLUMN "updated_at",
  DROP COLUMN "version",
  DROP COLUMN "delivery_generation",
  DROP COLUMN "change_id",
  DROP COLUMN "change_xid";

-- An error group's signature as the ledger triggers write it: lazarus_group_signature where a
-- migration before this one defined it (the stack-aware signature), else the fingerprint or the
-- message signature as the error-groups migration has it. Called once per group and statement,
-- on one of its rows, so a stack is read at most once per group.
DO $$
BEGIN
  IF to_regprocedure('lazarus_group_signature(text, text, text)') IS NOT NULL THEN
    CREATE FUNCTION lazarus_delta_signature(fingerprint text, error_signature text, error_stack text) RETURNS text
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT lazarus_group_signature(fingerprint, error_signature, error_stack)';
  ELSE
    CREATE FUNCTION lazarus_delta_signature(fingerprint text, error_signature text, error_stack text) RETURNS text
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT coalesce(fingerprint, error_signature)';
  END IF;
END $$;

-- The state row's stamp: what tg_dead_letters__stamp did for the wide row. A fresh cursor on
-- every write, version and updated_at on every update, the delivery generation when a SUCCEEDED
-- event is requeued, and resolved_* in step with the status.
CREATE FUNCTION "tg_dead_letter_states__stamp"() RETURNS trigger LANGUAGE plpgsql AS $$
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
END $$;
CREATE TRIGGER "tg_dead_letter_states__stamp" BEFORE INSERT OR UPDATE ON "dead_letter_states"
  FOR EACH ROW EXECUTE FUNCTION "tg_dead_letter_states__stamp"();

-- The NOTIFY hint names the table the feed reads, dead_letters, whichever table sent it.
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
  IF hint IS NOT NULL THEN
    PERFORM pg_notify('lazarus_changes', hint::text);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER "tg_dead_letter_states__notify_insert" AFTER INSERT ON "dead_letter_states"
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION "tg_lazarus__notify"('dead_letters');
CREATE TRIGGER "tg_dead_letter_states__notify_update" AFTER UPDATE ON "dead_letter_states"
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION "tg_lazarus__notify"('dead_letters');

-- A recorded event gets its state row from the values it was inserted with. ON CONFLICT: an
-- insert through lazarus_dead_letters writes the state row itself first (with a lease or
-- resolution the producer set), and this one then leaves it alone.
CREATE FUNCTION "tg_dead_letters__state_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_states (id, event_type, ordering_key, ordering_seq, status, attempts, next_attempt_at,
                                  lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason)
  SELECT id, event_type, ordering_key, ordering_seq, status, attempts, next_attempt_at,
         lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason
    FROM added
  ON CONFLICT (id) DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER "tg_dead_letters__state_insert" AFTER INSERT ON "dead_letters"
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__state_insert"();

-- The insert-time inputs never change: a write that tries is refused with a message that says
-- where the state lives, instead of being silently ignored.
CREATE FUNCTION "tg_dead_letters__inputs_fixed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'dead_letters holds the state an event was recorded with; its current status, attempts, lease and resolution are in dead_letter_states (or update the view lazarus_dead_letters)'
    USING ERRCODE = 'LZ422';
END $$;
CREATE TRIGGER "tg_dead_letters__inputs_fixed" BEFORE UPDATE OF "status", "attempts", "next_attempt_at",
  "lease_owner", "lease_token", "lease_expires_at", "resolved_at", "resolved_by", "resolution_reason" ON "dead_letters"
  FOR EACH ROW WHEN (
    (OLD.status, OLD.attempts, OLD.next_attempt_at, OLD.lease_owner, OLD.lease_token, OLD.lease_expires_at,
     OLD.resolved_at, OLD.resolved_by, OLD.resolution_reason)
    IS DISTINCT FROM
    (NEW.status, NEW.attempts, NEW.next_attempt_at, NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at,
     NEW.resolved_at, NEW.resolved_by, NEW.resolution_reason))
  EXECUTE FUNCTION "tg_dead_letters__inputs_fixed"();

-- A state transition (status or attempts) moves the rollups and the error groups' unresolved
-- counts, with the dimensions read from dead_letters by primary key. One trigger, one join, for
-- both ledgers; a lease renewal or a due-time change touches neither.
CREATE FUNCTION "tg_dead_letter_states__transitions"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH moved AS (
    SELECT n.id, o.status AS old_status, n.status, o.attempts AS old_attempts, n.attempts
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.status <> o.status OR n.attempts <> o.attempts),
  dims AS (
    SELECT m.*, lazarus_rollup_bucket(d.created_at) AS bucket, d.event_type, d.queue, d.error_kind, d.error_group_id
      FROM moved m JOIN dead_letters d ON d.id = m.id),
  rollups AS (
    INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
    SELECT bucket, event_type, queue, error_kind, status, sum(n), sum(a)
      FROM (SELECT bucket, event_type, queue, error_kind, status, 1 AS n, attempts::bigint AS a FROM dims
            UNION ALL
            SELECT bucket, event_type, queue, error_kind, old_status, -1, -old_attempts::bigint FROM dims) c
     GROUP BY 1, 2, 3, 4, 5
    HAVING sum(n) <> 0 OR sum(a) <> 0),
  -- A group's rows share its key (type, kind, signature), so one row gives the signature.
  by_group AS (
    SELECT error_group_id, event_type, error_kind, bucket, sum(u) AS u, min(id) AS one_id
      FROM (SELECT id, error_group_id, event_type, error_kind, bucket,
                   lazarus_is_unresolved(status) - lazarus_is_unresolved(old_status) AS u
              FROM dims WHERE error_group_id IS NOT NULL) x
     GROUP BY 1, 2, 3, 4
    HAVING sum(u) <> 0)
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued)
  SELECT g.error_group_id, g.event_type, g.error_kind, lazarus_delta_signature(d.fingerprint, d.error_signature, d.error_stack),
         g.bucket, 0, g.u, 0, greatest(0, g.u)
    FROM by_group g JOIN dead_letters d ON d.id = g.one_id;
  RETURN NULL;
END $$;
CREATE TRIGGER "tg_dead_letter_states__transitions" AFTER UPDATE ON "dead_letter_states"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letter_states__transitions"();

-- An update of the wide row (a payload edit, a transform, an error text or dimension changed by
-- SQL): the state row takes the copied columns and a new version and cursor, so the change
-- reaches the live feed in the one sequence; and a changed dimension moves the rollups and error
-- groups, counted with the current state.
CREATE FUNCTION "tg_dead_letters__update"() RETURNS trigger LANGUAGE plpgsql AS $$
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
     SET event_type = n.event_type, ordering_key = n.ordering_key, ordering_seq = n.ordering_seq, updated_at = now()
    FROM new_rows n WHERE s.id = n.id;
  RETURN NULL;
END $$;
CREATE TRIGGER "tg_dead_letters__update" AFTER UPDATE ON "dead_letters"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__update"();

-- A deletion removes the state rows and the delivery attempts and, counted with their state, takes
-- the events out of the rollups and the error groups' unresolved counts and leaves their
-- tombstones: one statement.
CREATE FUNCTION "tg_dead_letters__delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH s AS (
    DELETE FROM dead_letter_states s USING gone g WHERE s.id = g.id
    RETURNING s.id, s.status, s.attempts, s.updated_at, s.next_attempt_at),
  attempts AS (
    DELETE FROM delivery_attempts a USING gone g WHERE a.dead_letter_id = g.id),
  c AS (
    SELECT g.id, g.event_type, g.queue, g.source, g.ordering_key, g.error_kind, g.error_signature, g.fingerprint,
           g.error_stack, g.error_group_id, g.created_at, s.status, s.attempts, s.updated_at, s.next_attempt_at
      FROM gone g JOIN s ON s.id = g.id),
  rollups AS (
    INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
    SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, -count(*), -sum(attempts)
      FROM c GROUP BY 1, 2, 3, 4, 5),
  signatures AS (
    INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
    SELECT lazarus_rollup_bucket(created_at), error_signature, event_type, queue, error_kind, -count(*)
      FROM gone GROUP BY 1, 2, 3, 4, 5),
  groups AS (
    INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued)
    SELECT error_group_id, event_type, error_kind,
           lazarus_delta_signature(min(fingerprint), min(error_signature), max(error_stack COLLATE "C")), lazarus_rollup_bucket(created_at),
           0, -count(*), 0, 0
      FROM c WHERE status IN ('PENDING', 'PROCESSING', 'EXHAUSTED') AND error_group_id IS NOT NULL
     GROUP BY error_group_id, event_type, error_kind, lazarus_rollup_bucket(created_at))
  INSERT INTO dead_letter_tombstones (id, event_type, queue, source, ordering_key, error_kind, status,
                                      error_signature, fingerprint, error_group_id, attempts, created_at, updated_at, next_attempt_at)
  SELECT id, event_type, queue, source, ordering_key, error_kind, status,
         error_signature, fingerprint, error_group_id, attempts, created_at, updated_at, next_attempt_at
    FROM c;
  RETURN NULL;
END $$;
CREATE TRIGGER "tg_dead_letters__delete" AFTER DELETE ON "dead_letters"
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__delete"();

-- TRUNCATE dead_letters empties the state table and the attempts. When the same TRUNCATE names
-- them (`TRUNCATE dead_letter_states, dead_letters, delivery_attempts`), PostgreSQL refuses a
-- second TRUNCATE of a table the outer one holds open (object_in_use); they are empty already, and
-- a DELETE finds nothing. With the service running, a TRUNCATE can deadlock with it in either
-- order (a claim locks a state row, then reads dead_letters; a purge or an insert writes
-- dead_letters, then the state row): PostgreSQL aborts one side, and it can run again.
CREATE FUNCTION "tg_dead_letters__state_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    TRUNCATE dead_letter_states;
  EXCEPTION WHEN object_in_use THEN
    DELETE FROM dead_letter_states;
  END;
  BEGIN
    TRUNCATE delivery_attempts;
  EXCEPTION WHEN object_in_use THEN
    DELETE FROM delivery_attempts;
  END;
  RETURN NULL;
END $$;
CREATE TRIGGER "tg_dead_letters__state_truncate" AFTER TRUNCATE ON "dead_letters"
  FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__state_truncate"();

-- The event as it was one table: the wide row's columns and the current state, under the old
-- names and in the old order. psql users and the Prisma model read it; INSTEAD OF triggers make
-- inserts, updates and deletes through it land in the right table. (Producers insert into
-- dead_letters itself: ON CONFLICT needs the real table.)
CREATE VIEW "lazarus_dead_letters" AS
SELECT d.id, d.event_type, d.queue, d.source, d.ordering_key, d.ordering_seq, d.dedupe_key, d.payload, d.headers,
       d.error_kind, d.error_message, d.error_stack, s.status, s.attempts, d.max_attempts, s.next_attempt_at,
       s.lease_owner, s.lease_token, s.lease_expires_at, s.resolved_at, s.resolved_by, s.resolution_reason,
       d.occurred_at, d.created_at, s.updated_at, s.version, s.change_id, s.change_xid, d.error_signature,
       s.delivery_generation, d.fingerprint, d.error_group_id
  FROM dead_letters d JOIN dead_letter_states s ON s.id = d.id;
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "id" SET DEFAULT nextval('dead_letters_id_seq');
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "queue" SET DEFAULT 'default';
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "source" SET DEFAULT 'unknown';
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "payload" SET DEFAULT '{}';
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "headers" SET DEFAULT '{}';
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "error_kind" SET DEFAULT 'UNKNOWN';
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "error_message" SET DEFAULT '';
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "status" SET DEFAULT 'PENDING';
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "attempts" SET DEFAULT 0;
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "next_attempt_at" SET DEFAULT CURRENT_TIMESTAMP;
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "occurred_at" SET DEFAULT CURRENT_TIMESTAMP;
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "created_at" SET DEFAULT CURRENT_TIMESTAMP;
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "updated_at" SET DEFAULT CURRENT_TIMESTAMP;
ALTER VIEW "lazarus_dead_letters" ALTER COLUMN "delivery_generation" SET DEFAULT 0;

CREATE FUNCTION "tg_lazarus_dead_letters__write"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    DELETE FROM dead_letters WHERE id = OLD.id;
    RETURN OLD;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO dead_letter_states (id, event_type, ordering_key, ordering_seq, status, attempts, next_attempt_at,
                                    lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason,
                                    updated_at, delivery_generation)
    VALUES (NEW.id, NEW.event_type, NEW.ordering_key, NEW.ordering_seq, NEW.status, NEW.attempts, NEW.next_attempt_at,
            NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at, NEW.resolved_at, NEW.resolved_by, NEW.resolution_reason,
            coalesce(NEW.updated_at, now()), NEW.delivery_generation);
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
  SELECT * INTO NEW FROM lazarus_dead_letters WHERE id = NEW.id;
  RETURN NEW;
END $$;
CREATE TRIGGER "tg_lazarus_dead_letters__write" INSTEAD OF INSERT OR UPDATE OR DELETE ON "lazarus_dead_letters"
  FOR EACH ROW EXECUTE FUNCTION "tg_lazarus_dead_letters__write"();

-- The psql views read the current state (dead_letters.status is the recorded one now).
CREATE OR REPLACE VIEW "lazarus_blocked_keys" AS
WITH heads AS (
  SELECT DISTINCT ON (event_type, ordering_key) id, event_type, ordering_key, status,
         count(*) OVER key_queue - 1 AS held_back
    FROM dead_letter_states
   WHERE ordering_key IS NOT NULL AND status IN ('PENDING', 'PROCESSING', 'EXHAUSTED')
  WINDOW key_queue AS (PARTITION BY event_type, ordering_key ORDER BY coalesce(ordering_seq, -1), id
                       ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
   ORDER BY event_type, ordering_key, coalesce(ordering_seq, -1), id
)
SELECT h.ordering_key, h.id AS head_id, h.event_type AS head_event_type, d.error_signature AS head_error_signature,
       d.created_at AS head_created_at, h.held_back
  FROM heads h
  JOIN dead_letters d ON d.id = h.id
 WHERE h.status = 'EXHAUSTED' AND h.held_back > 0
   AND (SELECT p.ordered FROM retry_policies p WHERE p.event_type IN (h.event_type, '*') ORDER BY p.event_type = '*' LIMIT 1)
 ORDER BY h.held_back DESC, h.ordering_key, h.event_type;

CREATE OR REPLACE VIEW "lazarus_top_errors" AS
SELECT g.error_signature, g.failures, g.first_seen, g.last_seen, s.id AS sample_id, g.unresolved
  FROM (SELECT d.error_signature, count(*) AS failures, min(d.created_at) AS first_seen, max(d.created_at) AS last_seen,
               count(*) FILTER (WHERE t.status IN ('PENDING', 'PROCESSING', 'EXHAUSTED')) AS unresolved
          FROM dead_letters d JOIN dead_letter_states t ON t.id = d.id
         GROUP BY d.error_signature) g
 CROSS JOIN LATERAL (SELECT d.id FROM dead_letters d
                      WHERE d.error_signature = g.error_signature AND d.created_at = g.first_seen
                      ORDER BY d.id LIMIT 1) s
 ORDER BY g.failures DESC, g.error_signature;

CREATE OR REPLACE VIEW "lazarus_dlq_depth" AS
SELECT h.status, h.events, o.oldest_created_at
  FROM (SELECT b.status, sum(b.events)::bigint AS events, min(b.bucket) AS first_bucket
          FROM (SELECT status, bucket, sum(count) AS events FROM dead_letter_rollups
                 GROUP BY status, bucket HAVING sum(count) <> 0) b
         GROUP BY b.status) h
 CROSS JOIN LATERAL (SELECT min(d.created_at) AS oldest_created_at
                       FROM dead_letters d JOIN dead_letter_states s ON s.id = d.id
                      WHERE s.status = h.status AND d.created_at >= h.first_bucket
                        AND d.created_at < h.first_bucket + interval '1 hour') o
 ORDER BY h.status;
