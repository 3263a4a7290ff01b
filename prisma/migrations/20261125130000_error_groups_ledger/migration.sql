-- Error groups without locks: producers append deltas, a folder applies them.
--
-- Migration 20261125100000_error_groups kept error_groups up to date from statement triggers that
-- UPDATEd each group's counters in place. A producer's open transaction then held its group's row
-- lock, and every other producer of the same failure waited for it to commit (a DLQ producer must
-- never wait on another producer). This migration replaces those triggers with the stats rollups'
-- design (20261121160000_stats_rollups):
--   * a group's id is a function of its key (lazarus_error_group_id), computed for each row by its
--     own BEFORE trigger and stored in dead_letters.error_group_id, so nobody has to look a group up
--     (or create it) to know where a row belongs, and members are read by index;
--   * the statement triggers on dead_letters only APPEND signed delta rows to error_group_deltas,
--     a ledger: appends take no row locks, so producers never wait on each other;
--   * lazarus_fold_error_groups(max_rows) folds the oldest ledger rows into error_groups (create the
--     group, counters, first/last seen, queues, sources, hourly counts) and applies the lifecycle,
--     writing its history. The service calls it every few hundred milliseconds and on every
--     dead_letters NOTIFY hint (src/domain/errorGroupFolding.ts), in short batches; one folder runs
--     at a time across instances (a transaction-scoped advisory lock; another simply skips).
-- Counters are therefore exact once the ledger is folded, and behind it by the fold delay until
-- then (well under a second with the service running).
--
-- Lifecycle, applied by the folder as actor 'system', every change written to error_group_actions:
--   * a new group is OPEN, or RESOLVED when none of its first events is unresolved;
--   * OPEN or ACKNOWLEDGED with no unresolved member left after a fold → RESOLVED;
--   * RESOLVED with a new failure inserted, and unresolved members after the fold → OPEN with
--     regressed_at; RESOLVED with a member made unresolved again (a requeue) → OPEN;
--   * IGNORED stays IGNORED: it keeps counting and never changes by itself.
-- A failure that arrives and is resolved again within one fold leaves a RESOLVED group RESOLVED.

-- The old in-place triggers and their helpers go.
DROP TRIGGER "tg_dead_letters__error_groups_insert" ON "dead_letters";
DROP TRIGGER "tg_dead_letters__error_groups_update" ON "dead_letters";
DROP TRIGGER "tg_dead_letters__error_groups_delete" ON "dead_letters";
DROP FUNCTION "tg_dead_letters__error_groups_insert"();
DROP FUNCTION "tg_dead_letters__error_groups_update"();
DROP FUNCTION "tg_dead_letters__error_groups_delete"();
DROP FUNCTION "lazarus_add_error_group_batch"(lazarus_error_group_batch[], BIGINT[]);
DROP FUNCTION "lazarus_apply_error_group_changes"(lazarus_error_group_change[]);
DROP TYPE "lazarus_error_group_batch";
DROP TYPE "lazarus_error_group_change";

-- A group's id: the first 63 bits of md5 of its key, length-prefixed so that no two keys share a
-- text (error kinds hold no '|'). Two of a million groups share an id with a chance near 1 in 10^7;
-- then they count as one.
CREATE FUNCTION "lazarus_error_group_id"(event_type text, error_kind "ErrorKind", signature text) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
  SELECT ('x' || left(md5(length(event_type)::text || ':' || event_type || '|' || error_kind::text || '|' || signature), 16))::bit(64)::bigint
         & 9223372036854775807
$$;

-- Existing groups take their key's id; their history and hours follow (ON UPDATE CASCADE).
LOCK TABLE "dead_letters" IN SHARE ROW EXCLUSIVE MODE;
UPDATE "error_groups" SET "id" = lazarus_error_group_id("event_type", "error_kind", "signature");
ALTER TABLE "error_groups" ALTER COLUMN "id" DROP DEFAULT;
DROP SEQUENCE "error_groups_id_seq";

-- Each row's group. Filled for the existing rows as a generated column (a table rewrite that fires
-- no trigger, so no row looks changed to the live feed), then made a plain column kept by the row
-- trigger below, which recomputes it only when a column of the key changes (never on a claim or an
-- outcome). The signature is recomputed from the message because a BEFORE trigger runs before the
-- generated error_signature is.
ALTER TABLE "dead_letters" ADD COLUMN "error_group_id" BIGINT
  GENERATED ALWAYS AS (lazarus_error_group_id("event_type", "error_kind", coalesce("fingerprint", lazarus_error_signature("error_message")))) STORED;
ALTER TABLE "dead_letters" ALTER COLUMN "error_group_id" DROP EXPRESSION;
CREATE INDEX "dead_letters_error_group_idx" ON "dead_letters" ("error_group_id", "created_at");

CREATE FUNCTION "tg_dead_letters__error_group_id"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.error_group_id := lazarus_error_group_id(NEW.event_type, NEW.error_kind, coalesce(NEW.fingerprint, lazarus_error_signature(NEW.error_message)));
  RETURN NEW;
END $$;

CREATE TRIGGER "tg_dead_letters__error_group_id" BEFORE INSERT OR UPDATE OF "event_type", "error_kind", "fingerprint", "error_message", "error_group_id"
  ON "dead_letters" FOR EACH ROW EXECUTE FUNCTION "tg_dead_letters__error_group_id"();

-- Tombstones carry the group, so a groupId subscription learns of its members' deletion.
ALTER TABLE "dead_letter_tombstones" ADD COLUMN "error_group_id" BIGINT;

CREATE OR REPLACE FUNCTION "tg_dead_letters__tombstone"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_tombstones (id, event_type, queue, source, ordering_key, error_kind, status,
                                      error_signature, fingerprint, error_group_id, attempts, created_at, updated_at, next_attempt_at)
  SELECT id, event_type, queue, source, ordering_key, error_kind, status,
         error_signature, fingerprint, error_group_id, attempts, created_at, updated_at, next_attempt_at
    FROM gone;
  RETURN NULL;
END;
$$;

-- The ledger. One row per (group, hour of created_at) a statement changed:
--   total      events recorded into the group (+ inserted, ± moved by an UPDATE of the key; a
--              delete leaves it: it happened), also the hour's count for the sparkline;
--   unresolved members PENDING, PROCESSING or EXHAUSTED, signed;
--   failures   inserted unresolved rows (a regression of a RESOLVED group);
--   requeued   rows an UPDATE made unresolved again (reopens a RESOLVED group, not a regression).
-- The key travels with each row so the folder can create the group.
CREATE TABLE "error_group_deltas" (
    "id" BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    "group_id" BIGINT NOT NULL,
    "event_type" TEXT NOT NULL,
    "error_kind" "ErrorKind" NOT NULL,
    "signature" TEXT NOT NULL,
    "bucket" TIMESTAMPTZ(6) NOT NULL,
    "total" BIGINT NOT NULL,
    "unresolved" BIGINT NOT NULL,
    "failures" BIGINT NOT NULL,
    "requeued" BIGINT NOT NULL,
    "first_seen" TIMESTAMPTZ(6),
    "last_seen" TIMESTAMPTZ(6),
    "queues" TEXT[],
    "sources" TEXT[],
    "sample_id" BIGINT
);

CREATE FUNCTION "lazarus_is_unresolved"(status "DeadLetterStatus") RETURNS int
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$ SELECT (status IN ('PENDING', 'PROCESSING', 'EXHAUSTED'))::int $$;

CREATE FUNCTION "tg_dead_letters__error_groups_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued,
                                  first_seen, last_seen, queues, sources, sample_id)
  SELECT error_group_id, event_type, error_kind, coalesce(fingerprint, error_signature), lazarus_rollup_bucket(created_at),
         count(*), sum(lazarus_is_unresolved(status)), sum(lazarus_is_unresolved(status)), 0,
         min(created_at), max(created_at), array_agg(DISTINCT queue), array_agg(DISTINCT source), min(id)
    FROM added GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;

-- Old rows count -1 and new rows +1 in their groups, without pairing them (a join over the two
-- transition tables cost a full-table status UPDATE of 20,000 rows ~2x): a row that stays in its
-- group moves only its unresolved count, one whose key changed leaves the old group and joins the
-- new one. Groups whose sums are 0 (claims, attempts, leases, edits) write nothing. `requeued` is
-- the group's net rise in unresolved members (what reopens a RESOLVED group). A row moved into a
-- group by an UPDATE adds no queue or source to it (rare: a producer correcting rows in SQL).
CREATE FUNCTION "tg_dead_letters__error_groups_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued,
                                  first_seen, last_seen)
  SELECT group_id, event_type, error_kind, signature, bucket, sum(n), sum(u), 0, greatest(0, sum(u)),
         CASE WHEN sum(n) > 0 THEN min(created_at) END, CASE WHEN sum(n) > 0 THEN max(created_at) END
    FROM (SELECT error_group_id AS group_id, event_type, error_kind, coalesce(fingerprint, error_signature) AS signature,
                 lazarus_rollup_bucket(created_at) AS bucket, created_at, 1 AS n, lazarus_is_unresolved(status) AS u
            FROM new_rows
          UNION ALL
          SELECT error_group_id, event_type, error_kind, coalesce(fingerprint, error_signature),
                 lazarus_rollup_bucket(created_at), created_at, -1, -lazarus_is_unresolved(status)
            FROM old_rows) c
   WHERE group_id IS NOT NULL
   GROUP BY 1, 2, 3, 4, 5
  HAVING sum(n) <> 0 OR sum(u) <> 0;
  RETURN NULL;
END $$;

-- A deleted member leaves the unresolved count (total keeps it: it happened).
CREATE FUNCTION "tg_dead_letters__error_groups_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued)
  SELECT error_group_id, event_type, error_kind, coalesce(fingerprint, error_signature), lazarus_rollup_bucket(created_at),
         0, -count(*), 0, 0
    FROM gone WHERE status IN ('PENDING', 'PROCESSING', 'EXHAUSTED') AND error_group_id IS NOT NULL
   GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;

CREATE TRIGGER "tg_dead_letters__error_groups_insert" AFTER INSERT ON "dead_letters"
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__error_groups_insert"();
CREATE TRIGGER "tg_dead_letters__error_groups_update" AFTER UPDATE ON "dead_letters"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__error_groups_update"();
CREATE TRIGGER "tg_dead_letters__error_groups_delete" AFTER DELETE ON "dead_letters"
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__error_groups_delete"();

-- TRUNCATE fires no row or delete triggers: the groups and their ledger go with the rows.
CREATE OR REPLACE FUNCTION "tg_dead_letters__error_groups_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE error_group_deltas, error_group_hours, error_group_actions, error_groups;
  RETURN NULL;
END $$;

-- Only the folder and operators update error_groups now, never a producer, so indexes on what
-- changes cost producers nothing (the first design kept them out to keep the in-place updates HOT).
-- errorGroupChanged reads groups changed since a moment (src/notify/errorGroupChanges.ts), and the
-- errorGroups orders walk an index to their first page instead of sorting every group.
CREATE INDEX "error_groups_updated_at_idx" ON "error_groups" ("updated_at");
CREATE INDEX "error_groups_last_seen_idx" ON "error_groups" ("last_seen", "id");
CREATE INDEX "error_groups_total_count_idx" ON "error_groups" ("total_count", "id");
CREATE INDEX "error_groups_unresolved_count_idx" ON "error_groups" ("unresolved_count", "id");

-- One fold: takes (deletes) the oldest `max_rows` ledger rows and applies them. Returns how many
-- rows it took (-1 when another folder holds the lock: it will do the work) and how many groups it
-- changed. Groups are locked in id order, and only folders and operator moves lock them.
CREATE TYPE "lazarus_error_group_fold" AS (
    group_id BIGINT, event_type TEXT, error_kind "ErrorKind", signature TEXT, bucket TIMESTAMPTZ,
    total BIGINT, unresolved BIGINT, failures BIGINT, requeued BIGINT, first_seen TIMESTAMPTZ, last_seen TIMESTAMPTZ,
    queues TEXT[], sources TEXT[], sample_id BIGINT);

CREATE FUNCTION "lazarus_fold_error_groups"(max_rows int, OUT taken int, OUT changed int) LANGUAGE plpgsql AS $$
DECLARE
  batch lazarus_error_group_fold[];
  created BIGINT[];
  regressed BIGINT[];
BEGIN
  taken := 0;
  changed := 0;
  IF NOT pg_try_advisory_xact_lock(4757231860019247) THEN
    taken := -1;
    RETURN;
  END IF;
  WITH gone AS (
    DELETE FROM error_group_deltas
     WHERE id IN (SELECT id FROM error_group_deltas ORDER BY id LIMIT max_rows)
    RETURNING *
  ), per_hour AS (
    SELECT group_id, min(event_type) AS event_type, min(error_kind::text)::"ErrorKind" AS error_kind, min(signature) AS signature, bucket,
           sum(total) AS total, sum(unresolved) AS unresolved, sum(failures) AS failures, sum(requeued) AS requeued,
           min(first_seen) AS first_seen, max(last_seen) AS last_seen, min(sample_id) AS sample_id, count(*) AS n
      FROM gone GROUP BY group_id, bucket
  ), q AS (
    SELECT group_id, array_agg(DISTINCT v) AS queues FROM gone, unnest(gone.queues) v GROUP BY group_id
  ), s AS (
    SELECT group_id, array_agg(DISTINCT v) AS sources FROM gone, unnest(gone.sources) v GROUP BY group_id
  )
  -- Each hour row carries its group's queues and sources (unioned again below).
  SELECT array_agg(ROW(p.group_id, p.event_type, p.error_kind, p.signature, p.bucket, p.total, p.unresolved, p.failures, p.requeued,
                       p.first_seen, p.last_seen, q.queues, s.sources, p.sample_id)::lazarus_error_group_fold), coalesce(sum(p.n), 0)
    INTO batch, taken
    FROM per_hour p LEFT JOIN q USING (group_id) LEFT JOIN s USING (group_id);
  IF batch IS NULL THEN
    RETURN;
  END IF;

  -- New groups, with their status from their first events; counted below like the others.
  WITH k AS (
    SELECT group_id, min(event_type) AS event_type, min(error_kind::text)::"ErrorKind" AS error_kind, min(signature) AS signature,
           sum(unresolved) AS unresolved, coalesce(min(first_seen), now()) AS first_seen, coalesce(max(last_seen), now()) AS last_seen,
           min(sample_id) AS sample_id
      FROM unnest(batch) GROUP BY group_id
  ), made AS (
    INSERT INTO error_groups (id, event_type, error_kind, signature, status, first_seen, last_seen, sample_dead_letter_id)
    SELECT group_id, event_type, error_kind, signature,
           CASE WHEN unresolved > 0 THEN 'OPEN' ELSE 'RESOLVED' END::"ErrorGroupStatus", first_seen, last_seen, sample_id
      FROM k ORDER BY group_id
    ON CONFLICT DO NOTHING
    RETURNING id, status
  ), history AS (
    INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
    SELECT id, NULL, status, 'system', 'first seen' FROM made
  )
  SELECT coalesce(array_agg(id), '{}') INTO created FROM made;

  -- Outbound alerts (migration 20261125134500_alerts): a new group with unresolved members.
  PERFORM lazarus_raise_alert('NEW_GROUP', 'group:' || g.id,
            format('New error group: %s %s: %s', g.event_type, g.error_kind, g.signature),
            jsonb_build_object('groupId', g.id::text, 'eventType', g.event_type, 'errorKind', g.error_kind, 'signature', g.signature,
                               'firstSeen', g.first_seen))
     FROM error_groups g WHERE g.id = ANY (created) AND g.status = 'OPEN';

  PERFORM 1 FROM error_groups WHERE id IN (SELECT group_id FROM unnest(batch)) ORDER BY id FOR UPDATE;

  WITH k AS (
    SELECT group_id, sum(total) AS total, sum(unresolved) AS unresolved, sum(failures) AS failures, sum(requeued) AS requeued,
           min(first_seen) AS first_seen, max(last_seen) AS last_seen
      FROM unnest(batch) GROUP BY group_id
  ), q AS (
    SELECT b.group_id, array_agg(DISTINCT v ORDER BY v) AS queues FROM unnest(batch) b, unnest(b.queues) v GROUP BY 1
  ), s AS (
    SELECT b.group_id, array_agg(DISTINCT v ORDER BY v) AS sources FROM unnest(batch) b, unnest(b.sources) v GROUP BY 1
  ), old AS (
    SELECT g.id, g.status, g.unresolved_count, (g.id = ANY (created)) AS is_new, k.*, q.queues, s.sources
      FROM error_groups g JOIN k ON k.group_id = g.id LEFT JOIN q ON q.group_id = g.id LEFT JOIN s ON s.group_id = g.id
  ), moved AS (
    UPDATE error_groups g
       SET total_count = greatest(0, g.total_count + o.total),
           unresolved_count = greatest(0, g.unresolved_count + o.unresolved),
           first_seen = least(g.first_seen, coalesce(o.first_seen, g.first_seen)),
           last_seen = greatest(g.last_seen, coalesce(o.last_seen, g.last_seen)),
           queues = CASE WHEN o.queues IS NULL OR o.queues <@ g.queues THEN g.queues ELSE lazarus_array_union(g.queues, o.queues) END,
           sources = CASE WHEN o.sources IS NULL OR o.sources <@ g.sources THEN g.sources ELSE lazarus_array_union(g.sources, o.sources) END,
           status = CASE
             WHEN o.is_new THEN g.status
             WHEN g.status = 'RESOLVED' AND (o.failures > 0 OR o.requeued > 0) AND g.unresolved_count + o.unresolved > 0 THEN 'OPEN'
             WHEN g.status IN ('OPEN', 'ACKNOWLEDGED') AND g.unresolved_count + o.unresolved <= 0 THEN 'RESOLVED'
             ELSE g.status END::"ErrorGroupStatus",
           regressed_at = CASE
             WHEN NOT o.is_new AND g.status = 'RESOLVED' AND o.failures > 0 AND g.unresolved_count + o.unresolved > 0 THEN now()
             ELSE g.regressed_at END,
           updated_at = now()
      FROM old o
     WHERE g.id = o.id
    RETURNING g.id, o.status AS from_status, g.status AS to_status, o.failures
  ), hours AS (
    INSERT INTO error_group_hours AS h (group_id, bucket, count)
    SELECT group_id, bucket, sum(total) FROM unnest(batch) GROUP BY 1, 2 HAVING sum(total) <> 0 ORDER BY 1, 2
    ON CONFLICT (group_id, bucket) DO UPDATE SET count = h.count + excluded.count
  ), history AS (
    INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
    SELECT id, from_status, to_status, 'system',
           CASE WHEN to_status = 'RESOLVED' THEN 'no unresolved members'
                WHEN failures > 0 THEN 'regressed: a new failure'
                ELSE 'a member is unresolved again' END
      FROM moved WHERE from_status <> to_status
  )
  SELECT count(*), coalesce(array_agg(id) FILTER (WHERE from_status = 'RESOLVED' AND to_status = 'OPEN' AND failures > 0), '{}')
    INTO changed, regressed FROM moved;

  -- A RESOLVED group with a new failure regressed (IGNORED groups never move, so never alert).
  PERFORM lazarus_raise_alert('REGRESSION', 'group:' || g.id,
            format('Error group regressed: %s %s: %s', g.event_type, g.error_kind, g.signature),
            jsonb_build_object('groupId', g.id::text, 'eventType', g.event_type, 'errorKind', g.error_kind, 'signature', g.signature,
                               'regressedAt', g.regressed_at, 'unresolved', g.unresolved_count))
     FROM error_groups g WHERE g.id = ANY (regressed);
END $$;

-- No backfill: the existing groups were kept exact by the old triggers up to this migration, under
-- the lock taken above, and every later change goes through the ledger.
