-- Stats rollups: dead letters counted per UTC hour of created_at, event type, queue, error kind and
-- status, maintained by statement-level triggers so `deadLetterStats` need not scan the table.
--
-- The table is a ledger of signed deltas, not one counter row per group: each writing statement
-- APPENDS one row per group it changed (+n inserted, -n deleted, -old +new on update). A counter
-- row updated in place would be locked by every writer until its transaction ends, so concurrent
-- writers in the same hour and group would queue behind each other (and could deadlock across
-- multi-statement transactions). Appends take no row locks. A group's count is the SUM of its
-- rows; `lazarus_compact_rollups()` folds each group's rows into one, and is safe to run at any
-- time, concurrently with writers and with itself.

CREATE TABLE "dead_letter_rollups" (
    "id" BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    "bucket" TIMESTAMPTZ(6) NOT NULL,
    "event_type" TEXT NOT NULL,
    "queue" TEXT NOT NULL,
    "error_kind" "ErrorKind" NOT NULL,
    "status" "DeadLetterStatus" NOT NULL,
    "count" BIGINT NOT NULL
);

CREATE INDEX "dead_letter_rollups_bucket_idx" ON "dead_letter_rollups" ("bucket");

CREATE FUNCTION "lazarus_rollup_bucket"(created_at timestamptz) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$ SELECT date_trunc('hour', created_at, 'UTC') $$;

CREATE FUNCTION "tg_dead_letters__rollup_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count)
  SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, count(*)
    FROM new_rows GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;

CREATE FUNCTION "tg_dead_letters__rollup_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count)
  SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, -count(*)
    FROM old_rows GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;

-- Old rows count -1 and new rows +1 in their groups; groups whose sum is 0 (no rolled-up column
-- changed, e.g. a lease or attempts update) write nothing.
CREATE FUNCTION "tg_dead_letters__rollup_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count)
  SELECT bucket, event_type, queue, error_kind, status, sum(n)
    FROM (SELECT lazarus_rollup_bucket(created_at) AS bucket, event_type, queue, error_kind, status, 1 AS n FROM new_rows
          UNION ALL
          SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, -1 FROM old_rows) c
   GROUP BY 1, 2, 3, 4, 5
  HAVING sum(n) <> 0;
  RETURN NULL;
END $$;

CREATE FUNCTION "tg_dead_letters__rollup_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE dead_letter_rollups;
  RETURN NULL;
END $$;

CREATE TRIGGER "tg_dead_letters__rollup_insert" AFTER INSERT ON "dead_letters"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__rollup_insert"();
CREATE TRIGGER "tg_dead_letters__rollup_update" AFTER UPDATE ON "dead_letters"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__rollup_update"();
CREATE TRIGGER "tg_dead_letters__rollup_delete" AFTER DELETE ON "dead_letters"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__rollup_delete"();
CREATE TRIGGER "tg_dead_letters__rollup_truncate" AFTER TRUNCATE ON "dead_letters"
  FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__rollup_truncate"();

-- Folds every group that has more than one row (or sums to 0) into a single row (or none).
-- The DELETE only removes rows this statement locked and saw; a row appended concurrently stays for
-- the next run, and a concurrent compaction that deleted a row first makes this one skip it (READ
-- COMMITTED re-check), so the sums never change. Returns the rows removed.
CREATE FUNCTION "lazarus_compact_rollups"() RETURNS bigint LANGUAGE sql AS $$
  WITH groups AS (
    SELECT bucket, event_type, queue, error_kind, status FROM dead_letter_rollups
     GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 OR sum(count) = 0
  ), gone AS (
    DELETE FROM dead_letter_rollups r USING groups g
     WHERE r.bucket = g.bucket AND r.event_type = g.event_type AND r.queue = g.queue
       AND r.error_kind = g.error_kind AND r.status = g.status
    RETURNING r.*
  ), merged AS (
    INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count)
    SELECT bucket, event_type, queue, error_kind, status, sum(count) FROM gone
     GROUP BY 1, 2, 3, 4, 5 HAVING sum(count) <> 0
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM gone) - (SELECT count(*) FROM merged)
$$;

-- Backfill. The lock keeps writers out between the triggers' creation and the backfill (both in
-- this migration's transaction), so every existing row is counted exactly once.
LOCK TABLE "dead_letters" IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count)
SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, count(*)
  FROM dead_letters GROUP BY 1, 2, 3, 4, 5;
