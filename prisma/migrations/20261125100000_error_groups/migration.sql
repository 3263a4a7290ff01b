-- Error groups: failures with one identity, counted and given a lifecycle by the database.
--
-- A group is keyed by (event_type, error_kind, signature), where the signature is the row's
-- `fingerprint` when the producer set one (as Sentry allows) and otherwise its computed
-- `error_signature` (lazarus_error_signature of the message, migration 20261121100000_read_side).
-- The statement-level triggers below keep the groups up to date from the transition tables, so a
-- plain SQL producer is covered and a bulk INSERT of 20,000 rows costs one aggregate per group,
-- never work per row:
--   * insert: create missing groups, then add the batch's counts, first/last seen, queues, sources
--     and hourly counts (for the sparkline);
--   * update and delete: move the unresolved count (members PENDING, PROCESSING or EXHAUSTED) and,
--     for rows an UPDATE moved to another group, the total. The retry loop's claims and outcomes
--     that keep a row unresolved change no count and write nothing.
-- total_count counts every event ever recorded into the group (a deleted member still counted);
-- unresolved_count is exact: a deleted unresolved member leaves it. The counts are never below 0
-- and have no CHECK: with the triggers disabled for a while (ALTER TABLE … DISABLE TRIGGER,
-- session_replication_role = replica) they drift, and a writer of dead letters must not fail
-- over the groups' bookkeeping.
--
-- Counters are updated in place, not appended like the stats ledgers, because the lifecycle reads
-- them: "resolve when unresolved reaches 0" must see every committed change. So writers to the same
-- group queue on its row until commit. Each statement locks its groups in id order (new ones are
-- created in key order first), so single-statement writers cannot deadlock. No index covers a
-- counter or last_seen, so these updates stay HOT; orderings sort the (few thousand) groups.
--
-- Lifecycle, applied by the triggers as actor 'system', every change written to
-- error_group_actions:
--   * a new group is OPEN, or RESOLVED when none of its first events is unresolved;
--   * OPEN or ACKNOWLEDGED with unresolved reaching 0 → RESOLVED;
--   * RESOLVED with a new failure inserted → OPEN with regressed_at = now(); RESOLVED with a member
--     made unresolved again (a requeue) → OPEN;
--   * IGNORED stays IGNORED: it keeps counting and never changes by itself.
-- Operators move groups with the error group mutations (src/domain/errorGroups.ts).

CREATE TYPE "ErrorGroupStatus" AS ENUM ('OPEN', 'ACKNOWLEDGED', 'RESOLVED', 'IGNORED');

-- A producer's own grouping key. Adding a nullable column without a default rewrites nothing.
ALTER TABLE "dead_letters" ADD COLUMN "fingerprint" TEXT,
  ADD CONSTRAINT "dead_letters_fingerprint_check" CHECK ("fingerprint" IS NULL OR length("fingerprint") BETWEEN 1 AND 300);

-- deadLetters(filter: { groupId }) reads members with fingerprints here, the others through
-- dead_letters_error_signature_idx. Partial, so rows without a fingerprint cost nothing.
CREATE INDEX "dead_letters_fingerprint_idx" ON "dead_letters" ("fingerprint", "created_at") WHERE "fingerprint" IS NOT NULL;

CREATE TABLE "error_groups" (
    "id" BIGSERIAL NOT NULL,
    "event_type" TEXT NOT NULL,
    "error_kind" "ErrorKind" NOT NULL,
    "signature" TEXT NOT NULL,
    "status" "ErrorGroupStatus" NOT NULL DEFAULT 'OPEN',
    "first_seen" TIMESTAMPTZ(6) NOT NULL,
    "last_seen" TIMESTAMPTZ(6) NOT NULL,
    "total_count" BIGINT NOT NULL DEFAULT 0,
    "unresolved_count" BIGINT NOT NULL DEFAULT 0,
    "queues" TEXT[] NOT NULL DEFAULT '{}',
    "sources" TEXT[] NOT NULL DEFAULT '{}',
    "sample_dead_letter_id" BIGINT,
    "regressed_at" TIMESTAMPTZ(6),
    "note" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "error_groups_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "error_groups_note_check" CHECK ("note" IS NULL OR length("note") <= 2000)
);
CREATE UNIQUE INDEX "error_groups_key_key" ON "error_groups" ("event_type", "error_kind", "signature");
CREATE INDEX "error_groups_status_idx" ON "error_groups" ("status");

-- Every status change of a group, with who and why (triggers write actor 'system').
CREATE TABLE "error_group_actions" (
    "id" BIGSERIAL NOT NULL,
    "group_id" BIGINT NOT NULL,
    "from_status" "ErrorGroupStatus",
    "to_status" "ErrorGroupStatus" NOT NULL,
    "actor" TEXT NOT NULL,
    "reason" TEXT,
    "note" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "error_group_actions_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "error_group_actions_group_idx" ON "error_group_actions" ("group_id", "id");
ALTER TABLE "error_group_actions" ADD CONSTRAINT "error_group_actions_group_id_fkey"
  FOREIGN KEY ("group_id") REFERENCES "error_groups"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Events recorded per group and UTC hour, for sparklines and the TREND order. The signature ledger
-- (dead_letter_signature_rollups) cannot serve this: it is keyed by error_signature, not by the
-- fingerprint. Upserted in the same transaction that already holds the group's row lock, so it
-- adds no waiting of its own. Read by group (the primary key); no other index, so the upsert's
-- update stays HOT.
CREATE TABLE "error_group_hours" (
    "group_id" BIGINT NOT NULL,
    "bucket" TIMESTAMPTZ(6) NOT NULL,
    "count" BIGINT NOT NULL,
    CONSTRAINT "error_group_hours_pkey" PRIMARY KEY ("group_id", "bucket")
);
ALTER TABLE "error_group_hours" ADD CONSTRAINT "error_group_hours_group_id_fkey"
  FOREIGN KEY ("group_id") REFERENCES "error_groups"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- What one statement adds to a group in one hour (insert), and what it moves (update, delete).
CREATE TYPE "lazarus_error_group_batch" AS (
    event_type TEXT, error_kind "ErrorKind", signature TEXT, bucket TIMESTAMPTZ,
    total BIGINT, unresolved BIGINT, first_seen TIMESTAMPTZ, last_seen TIMESTAMPTZ, sample_id BIGINT,
    queues TEXT[], sources TEXT[]);
CREATE TYPE "lazarus_error_group_change" AS (
    event_type TEXT, error_kind "ErrorKind", signature TEXT, total BIGINT, unresolved BIGINT);

-- The distinct values of both arrays, sorted, at most 100 (a group fed by thousands of sources
-- lists the first hundred by name; the full answer is a deadLetters query away).
CREATE FUNCTION "lazarus_array_union"(a TEXT[], b TEXT[]) RETURNS TEXT[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN b <@ a THEN a
              ELSE ARRAY(SELECT DISTINCT v FROM unnest(a || b) v ORDER BY v LIMIT 100) END
$$;

-- Adds a statement's batch to the existing groups of its keys (but those in `skip`): counts, first
-- and last seen, queues, sources, hourly counts, and the regression of RESOLVED groups, with
-- history. Returns the ids of the groups it changed.
CREATE FUNCTION "lazarus_add_error_group_batch"(batch lazarus_error_group_batch[], skip BIGINT[]) RETURNS BIGINT[] LANGUAGE plpgsql AS $$
DECLARE
  done BIGINT[];
BEGIN
  WITH k AS (
    SELECT event_type, error_kind, signature, sum(total) AS total, sum(unresolved) AS unresolved,
           min(first_seen) AS first_seen, max(last_seen) AS last_seen
      FROM unnest(batch) GROUP BY 1, 2, 3
  ), q AS (
    SELECT b.event_type, b.error_kind, b.signature, array_agg(DISTINCT v) AS queues
      FROM unnest(batch) b, unnest(b.queues) v GROUP BY 1, 2, 3
  ), s AS (
    SELECT b.event_type, b.error_kind, b.signature, array_agg(DISTINCT v) AS sources
      FROM unnest(batch) b, unnest(b.sources) v GROUP BY 1, 2, 3
  ), old AS (
    SELECT g.id, g.status, k.total, k.unresolved, k.first_seen, k.last_seen, q.queues, s.sources
      FROM error_groups g
      JOIN k USING (event_type, error_kind, signature)
      JOIN q USING (event_type, error_kind, signature)
      JOIN s USING (event_type, error_kind, signature)
     WHERE g.id <> ALL (skip)
  ), changed AS (
    UPDATE error_groups g
       SET total_count = g.total_count + o.total,
           unresolved_count = g.unresolved_count + o.unresolved,
           first_seen = least(g.first_seen, o.first_seen),
           last_seen = greatest(g.last_seen, o.last_seen),
           queues = lazarus_array_union(g.queues, o.queues),
           sources = lazarus_array_union(g.sources, o.sources),
           status = CASE WHEN g.status = 'RESOLVED' AND o.unresolved > 0 THEN 'OPEN' ELSE g.status END,
           regressed_at = CASE WHEN g.status = 'RESOLVED' AND o.unresolved > 0 THEN now() ELSE g.regressed_at END,
           updated_at = now()
      FROM old o
     WHERE g.id = o.id
    RETURNING g.id, g.event_type, g.error_kind, g.signature, o.status AS from_status, g.status AS to_status
  ), hours AS (
    INSERT INTO error_group_hours AS h (group_id, bucket, count)
    SELECT c.id, b.bucket, sum(b.total)
      FROM changed c JOIN unnest(batch) b USING (event_type, error_kind, signature)
     GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (group_id, bucket) DO UPDATE SET count = h.count + excluded.count
  ), history AS (
    INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
    SELECT id, from_status, to_status, 'system', 'regressed: a new failure' FROM changed WHERE from_status <> to_status
  )
  SELECT coalesce(array_agg(id), '{}') INTO done FROM changed;
  RETURN done;
END $$;

CREATE FUNCTION "tg_dead_letters__error_groups_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  batch lazarus_error_group_batch[];
  keys INT;
  done BIGINT[];
  counted INT;
BEGIN
  -- One row whose group exists (a producer's usual INSERT): one statement, no arrays. This path
  -- costs a one-row INSERT ~0.1 ms of server time, the general one ~0.3 ms (docs/benchmarks.md).
  IF (SELECT count(*) FROM added) = 1 THEN
    WITH a AS (
      SELECT event_type, error_kind, coalesce(fingerprint, error_signature) AS signature, lazarus_rollup_bucket(created_at) AS bucket,
             (status IN ('PENDING', 'PROCESSING', 'EXHAUSTED'))::int AS u, created_at, queue, source
        FROM added
    ), old AS (
      SELECT g.id, g.status, a.* FROM error_groups g JOIN a USING (event_type, error_kind, signature)
    ), changed AS (
      UPDATE error_groups g
         SET total_count = g.total_count + 1,
             unresolved_count = g.unresolved_count + o.u,
             first_seen = least(g.first_seen, o.created_at),
             last_seen = greatest(g.last_seen, o.created_at),
             queues = CASE WHEN o.queue = ANY (g.queues) THEN g.queues ELSE lazarus_array_union(g.queues, ARRAY[o.queue]) END,
             sources = CASE WHEN o.source = ANY (g.sources) THEN g.sources ELSE lazarus_array_union(g.sources, ARRAY[o.source]) END,
             status = CASE WHEN g.status = 'RESOLVED' AND o.u > 0 THEN 'OPEN' ELSE g.status END,
             regressed_at = CASE WHEN g.status = 'RESOLVED' AND o.u > 0 THEN now() ELSE g.regressed_at END,
             updated_at = now()
        FROM old o
       WHERE g.id = o.id
      RETURNING g.id, o.status AS from_status, g.status AS to_status, o.bucket
    ), hours AS (
      INSERT INTO error_group_hours AS h (group_id, bucket, count)
      SELECT id, bucket, 1 FROM changed
      ON CONFLICT (group_id, bucket) DO UPDATE SET count = h.count + 1
    ), history AS (
      INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
      SELECT id, from_status, to_status, 'system', 'regressed: a new failure' FROM changed WHERE from_status <> to_status
    )
    SELECT count(*) INTO counted FROM changed;
    IF counted = 1 THEN
      RETURN NULL;
    END IF;
  END IF;

  -- The one pass over the inserted rows: per group and hour.
  SELECT array_agg(ROW(event_type, error_kind, signature, bucket, n, u, f, l, s, q, src)::lazarus_error_group_batch),
         count(DISTINCT (event_type, error_kind, signature))
    INTO batch, keys
    FROM (SELECT event_type, error_kind, coalesce(fingerprint, error_signature) AS signature,
                 lazarus_rollup_bucket(created_at) AS bucket, count(*) AS n,
                 count(*) FILTER (WHERE status IN ('PENDING', 'PROCESSING', 'EXHAUSTED')) AS u,
                 min(created_at) AS f, max(created_at) AS l, min(id) AS s,
                 array_agg(DISTINCT queue) AS q, array_agg(DISTINCT source) AS src
            FROM added GROUP BY 1, 2, 3, 4) h;
  IF batch IS NULL THEN
    RETURN NULL;
  END IF;
  IF keys > 1 THEN
    PERFORM 1 FROM error_groups g
      JOIN (SELECT DISTINCT event_type, error_kind, signature FROM unnest(batch)) k USING (event_type, error_kind, signature)
     ORDER BY g.id FOR UPDATE OF g;
  END IF;

  -- Usually every group exists: one statement. Otherwise the missing ones are created, in key
  -- order, with zero counts (a concurrent creator's wins), and counted like the others.
  done := lazarus_add_error_group_batch(batch, '{}');
  IF cardinality(done) < keys THEN
    WITH missing AS (
      SELECT event_type, error_kind, signature, min(first_seen) AS f, max(last_seen) AS l, min(sample_id) AS s, sum(unresolved) AS u
        FROM unnest(batch) b
       WHERE NOT EXISTS (SELECT 1 FROM error_groups g WHERE g.id = ANY (done) AND (g.event_type, g.error_kind, g.signature) = (b.event_type, b.error_kind, b.signature))
       GROUP BY 1, 2, 3
    ), created AS (
      INSERT INTO error_groups (event_type, error_kind, signature, status, first_seen, last_seen, sample_dead_letter_id)
      SELECT event_type, error_kind, signature, CASE WHEN u > 0 THEN 'OPEN' ELSE 'RESOLVED' END::"ErrorGroupStatus", f, l, s
        FROM missing ORDER BY 1, 2, 3
      ON CONFLICT (event_type, error_kind, signature) DO NOTHING
      RETURNING id, status
    )
    INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
    SELECT id, NULL, status, 'system', 'first seen' FROM created;
    PERFORM lazarus_add_error_group_batch(batch, done);
  END IF;
  RETURN NULL;
END $$;

-- Applies moved counts (update, delete) and the lifecycle that follows from them.
CREATE FUNCTION "lazarus_apply_error_group_changes"(changes lazarus_error_group_change[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  -- Rows an UPDATE moved into a group that does not exist yet (a producer correcting rows in SQL).
  WITH created AS (
    INSERT INTO error_groups (event_type, error_kind, signature, first_seen, last_seen)
    SELECT event_type, error_kind, signature, now(), now() FROM unnest(changes) WHERE total > 0 ORDER BY 1, 2, 3
    ON CONFLICT (event_type, error_kind, signature) DO NOTHING
    RETURNING id, status
  )
  INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
  SELECT id, NULL, status, 'system', 'first seen (a member moved in)' FROM created;

  PERFORM 1 FROM error_groups g JOIN unnest(changes) c USING (event_type, error_kind, signature)
   ORDER BY g.id FOR UPDATE OF g;

  WITH old AS (
    SELECT g.id, g.status, g.unresolved_count, c.total, c.unresolved
      FROM error_groups g JOIN unnest(changes) c USING (event_type, error_kind, signature)
  ), changed AS (
    UPDATE error_groups g
       SET total_count = greatest(0, g.total_count + o.total),
           unresolved_count = greatest(0, g.unresolved_count + o.unresolved),
           status = CASE
             WHEN g.status IN ('OPEN', 'ACKNOWLEDGED') AND o.unresolved < 0 AND g.unresolved_count + o.unresolved <= 0 THEN 'RESOLVED'
             WHEN g.status = 'RESOLVED' AND o.unresolved > 0 THEN 'OPEN'
             ELSE g.status END,
           updated_at = now()
      FROM old o
     WHERE g.id = o.id
    RETURNING g.id, o.status AS from_status, g.status AS to_status
  )
  INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
  SELECT id, from_status, to_status, 'system',
         CASE WHEN to_status = 'RESOLVED' THEN 'no unresolved members' ELSE 'a member is unresolved again' END
    FROM changed WHERE from_status <> to_status;
END $$;

-- Old rows count -1 and new rows +1 in their groups; only groups whose unresolved count or
-- membership moved are touched (a claim, PENDING → PROCESSING, moves nothing).
CREATE FUNCTION "tg_dead_letters__error_groups_update"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changes lazarus_error_group_change[];
BEGIN
  SELECT array_agg(ROW(event_type, error_kind, signature, n, u)::lazarus_error_group_change)
    INTO changes
    FROM (SELECT event_type, error_kind, signature, sum(n) AS n, sum(u) AS u
            FROM (SELECT event_type, error_kind, coalesce(fingerprint, error_signature) AS signature, 1 AS n,
                         (status IN ('PENDING', 'PROCESSING', 'EXHAUSTED'))::int AS u
                    FROM new_rows
                  UNION ALL
                  SELECT event_type, error_kind, coalesce(fingerprint, error_signature), -1,
                         -(status IN ('PENDING', 'PROCESSING', 'EXHAUSTED'))::int
                    FROM old_rows) c
           GROUP BY 1, 2, 3
          HAVING sum(n) <> 0 OR sum(u) <> 0) d;
  IF changes IS NOT NULL THEN
    PERFORM lazarus_apply_error_group_changes(changes);
  END IF;
  RETURN NULL;
END $$;

-- A deleted member leaves the unresolved count (total_count keeps it: it happened).
CREATE FUNCTION "tg_dead_letters__error_groups_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changes lazarus_error_group_change[];
BEGIN
  SELECT array_agg(ROW(event_type, error_kind, signature, 0, -u)::lazarus_error_group_change)
    INTO changes
    FROM (SELECT event_type, error_kind, coalesce(fingerprint, error_signature) AS signature, count(*) AS u
            FROM gone WHERE status IN ('PENDING', 'PROCESSING', 'EXHAUSTED') GROUP BY 1, 2, 3) d;
  IF changes IS NOT NULL THEN
    PERFORM lazarus_apply_error_group_changes(changes);
  END IF;
  RETURN NULL;
END $$;

-- TRUNCATE fires no row or delete triggers: the groups go with the rows, as the rollups do.
CREATE FUNCTION "tg_dead_letters__error_groups_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE error_group_hours, error_group_actions, error_groups;
  RETURN NULL;
END $$;

CREATE TRIGGER "tg_dead_letters__error_groups_insert" AFTER INSERT ON "dead_letters"
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__error_groups_insert"();
CREATE TRIGGER "tg_dead_letters__error_groups_update" AFTER UPDATE ON "dead_letters"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__error_groups_update"();
CREATE TRIGGER "tg_dead_letters__error_groups_delete" AFTER DELETE ON "dead_letters"
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__error_groups_delete"();
CREATE TRIGGER "tg_dead_letters__error_groups_truncate" AFTER TRUNCATE ON "dead_letters"
  FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__error_groups_truncate"();

-- Tombstones keep the fingerprint, so a groupId subscription learns of its members' deletion.
ALTER TABLE "dead_letter_tombstones" ADD COLUMN "fingerprint" TEXT;

CREATE OR REPLACE FUNCTION "tg_dead_letters__tombstone"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_tombstones (id, event_type, queue, source, ordering_key, error_kind, status,
                                      error_signature, fingerprint, attempts, created_at, updated_at, next_attempt_at)
  SELECT id, event_type, queue, source, ordering_key, error_kind, status,
         error_signature, fingerprint, attempts, created_at, updated_at, next_attempt_at
    FROM gone;
  RETURN NULL;
END;
$$;

-- Backfill. The lock keeps writers out until this transaction commits, so every existing row is
-- counted exactly once.
LOCK TABLE "dead_letters" IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO error_groups (event_type, error_kind, signature, status, first_seen, last_seen, total_count, unresolved_count,
                          queues, sources, sample_dead_letter_id)
SELECT event_type, error_kind, error_signature,
       CASE WHEN count(*) FILTER (WHERE status IN ('PENDING', 'PROCESSING', 'EXHAUSTED')) > 0 THEN 'OPEN' ELSE 'RESOLVED' END::"ErrorGroupStatus",
       min(created_at), max(created_at), count(*), count(*) FILTER (WHERE status IN ('PENDING', 'PROCESSING', 'EXHAUSTED')),
       (array_agg(DISTINCT queue ORDER BY queue))[1:100], (array_agg(DISTINCT source ORDER BY source))[1:100], min(id)
  FROM dead_letters GROUP BY 1, 2, 3;
INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
SELECT id, NULL, status, 'system', 'first seen (backfill)' FROM error_groups;
INSERT INTO error_group_hours (group_id, bucket, count)
SELECT g.id, h.bucket, h.n
  FROM (SELECT event_type, error_kind, error_signature AS signature, lazarus_rollup_bucket(created_at) AS bucket, count(*) AS n
          FROM dead_letters GROUP BY 1, 2, 3, 4) h
  JOIN error_groups g USING (event_type, error_kind, signature);
