-- The state row gets the event's created_at, and the status pages an index that walks one status
-- in created order: dead_letter_states_status_created_idx.
--
-- Since the queue-state split (20261126130000_narrow_queue_state) the current status lives only
-- in dead_letter_states, which had no creation time. A page such as "EXHAUSTED, newest first" (the
-- console's triage list) walked dead_letters_created_idx newest first and looked up each event's
-- state row until it had a page of EXHAUSTED ones. That is fast when the status is common among
-- recent events, and a scan of the table when it is not: with 1,000,000 events of which 1% are
-- EXHAUSTED, all of them older than the newest 27 days of successes (a redrive that worked, and
-- the events that did not, left behind), the page took 1.4 s and 4.5M buffers; at 10M rows, ten
-- times that (docs/benchmarks.md, "Session 19").
--
-- created_at is written once: copied from dead_letters when the state row is made, and again by
-- tg_dead_letters__update if a writer in psql changes dead_letters.created_at.
--
-- The index leaves out PROCESSING (a claimed event: the lease index holds those) and SUCCEEDED
-- (the drain's outcome): the retry engine's claim and successful completion add no entry to it, so
-- the hot loop pays nothing for it. An insert (PENDING), a failed attempt (PENDING again, or
-- EXHAUSTED) and an operator's close (RESOLVED, DISCARDED) add one. A SUCCEEDED page walks the
-- created index as before; successes are what recent events mostly are.
ALTER TABLE "dead_letter_states" ADD COLUMN "created_at" timestamptz(6);

-- Existing rows, in batches of 50,000 ids, with the state table's triggers off: filling in a
-- copied column is not a change of the event (no cursor step, no version, no NOTIFY hint, no
-- history). Nothing else writes the table until this transaction commits (ALTER TABLE holds it).
DO $$
DECLARE
  enabled text[];
  t text;
  lo BIGINT := 0;
  hi BIGINT;
BEGIN
  SELECT coalesce(array_agg(tgname::text), '{}') INTO enabled
    FROM pg_trigger WHERE tgrelid = '"dead_letter_states"'::regclass AND NOT tgisinternal AND tgenabled <> 'D';
  FOREACH t IN ARRAY enabled LOOP
    EXECUTE format('ALTER TABLE "dead_letter_states" DISABLE TRIGGER %I', t);
  END LOOP;
  SELECT coalesce(max(id), 0) INTO hi FROM dead_letter_states;
  WHILE lo < hi LOOP
    UPDATE dead_letter_states s SET created_at = d.created_at
      FROM dead_letters d
     WHERE d.id = s.id AND s.id > lo AND s.id <= lo + 50000;
    lo := lo + 50000;
  END LOOP;
  -- A state row whose event is gone (deleted with triggers off) is in no read, the view joins
  -- both; it gets its own last write time rather than failing the NOT NULL below.
  UPDATE dead_letter_states SET created_at = updated_at WHERE created_at IS NULL;
  FOREACH t IN ARRAY enabled LOOP
    EXECUTE format('ALTER TABLE "dead_letter_states" ENABLE TRIGGER %I', t);
  END LOOP;
END $$;

ALTER TABLE "dead_letter_states" ALTER COLUMN "created_at" SET NOT NULL;

CREATE INDEX "dead_letter_states_status_created_idx" ON "dead_letter_states" ("status", "created_at", "id")
  WHERE "status" NOT IN ('PROCESSING', 'SUCCEEDED');

CREATE OR REPLACE FUNCTION tg_dead_letters__state_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_states (id, event_type, ordering_key, ordering_seq, created_at, status, attempts, next_attempt_at,
                                  lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason)
  SELECT id, event_type, ordering_key, ordering_seq, created_at, status, attempts, next_attempt_at,
         lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason
    FROM added
  ON CONFLICT (id) DO NOTHING;
  RETURN NULL;
END $$;

-- As in 20261130100000_stamp_in_statements, with created_at among the copied columns.
CREATE OR REPLACE FUNCTION tg_dead_letters__update() RETURNS trigger LANGUAGE plpgsql AS $$
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
     SET event_type = n.event_type, ordering_key = n.ordering_key, ordering_seq = n.ordering_seq, created_at = n.created_at,
         change_id = CASE WHEN s.change_xid = pg_current_xact_id() THEN s.change_id ELSE nextval('lazarus_change_seq') END,
         change_xid = pg_current_xact_id(),
         version = CASE WHEN s.change_xid = pg_current_xact_id() THEN s.version ELSE s.version + 1 END,
         updated_at = now()
    FROM new_rows n
   WHERE s.id = n.id
     AND (s.change_xid IS DISTINCT FROM pg_current_xact_id()
          OR (s.event_type, s.ordering_key, s.ordering_seq, s.created_at)
             IS DISTINCT FROM (n.event_type, n.ordering_key, n.ordering_seq, n.created_at));
  RETURN NULL;
END $$;

-- The view's write trigger (an insert through lazarus_dead_letters, as Prisma and psql do) makes
-- the state row itself, before the event's: as in 20261126130000_narrow_queue_state, with
-- created_at. An update of created_at through the view goes to dead_letters, and from there to the
-- state row by tg_dead_letters__update above.
CREATE OR REPLACE FUNCTION "tg_lazarus_dead_letters__write"() RETURNS trigger LANGUAGE plpgsql AS $$
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
