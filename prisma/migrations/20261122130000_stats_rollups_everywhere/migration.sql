-- Every deadLetterStats figure from rollups. Before, these scanned every matching row at each
-- request (at 1M rows: the retry figures 80-100 ms, topErrors 90-130 ms for 7-30 days).
--
-- 1. Retry outcomes: each dead_letter_rollups row also carries the sum of its events' attempts,
--    signed like its count, so "mean attempts to success" is sum(attempts) / sum(count) over the
--    SUCCEEDED groups.
-- 2. Top errors: a second ledger of signed deltas, like dead_letter_rollups (see 20261121160000),
--    counts dead letters per UTC hour, error signature, event type, queue and error kind. It has
--    no status column, so the retry loop's and the operators' status changes never write it: only
--    inserts, deletes, and updates that set the message, type, queue, kind or created time do.
--    Each listed signature's first and last time seen, and its sample (the first seen event), are
--    read from dead_letters_error_signature_idx, so the ledger needs only counts.

ALTER TABLE "dead_letter_rollups" ADD COLUMN "attempts" BIGINT NOT NULL DEFAULT 0;

CREATE TABLE "dead_letter_signature_rollups" (
    "id" BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    "bucket" TIMESTAMPTZ(6) NOT NULL,
    "error_signature" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    "queue" TEXT NOT NULL,
    "error_kind" "ErrorKind" NOT NULL,
    "count" BIGINT NOT NULL
);

-- A top-errors request reads a range of hours, index-only.
CREATE INDEX "dead_letter_signature_rollups_bucket_idx" ON "dead_letter_signature_rollups" ("bucket")
  INCLUDE ("error_signature", "event_type", "queue", "error_kind", "count");

CREATE OR REPLACE FUNCTION "tg_dead_letters__rollup_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
  SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, count(*), sum(attempts)
    FROM new_rows GROUP BY 1, 2, 3, 4, 5;
  INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
  SELECT lazarus_rollup_bucket(created_at), error_signature, event_type, queue, error_kind, count(*)
    FROM new_rows GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "tg_dead_letters__rollup_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
  SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, -count(*), -sum(attempts)
    FROM old_rows GROUP BY 1, 2, 3, 4, 5;
  INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
  SELECT lazarus_rollup_bucket(created_at), error_signature, event_type, queue, error_kind, -count(*)
    FROM old_rows GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "tg_dead_letters__rollup_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE dead_letter_rollups, dead_letter_signature_rollups;
  RETURN NULL;
END $$;

-- Old rows count -1 and new rows +1 in their groups, with their attempts; groups where neither
-- sum moved (no rolled-up column or attempts changed, e.g. a lease renewal) write nothing.
CREATE OR REPLACE FUNCTION "tg_dead_letters__rollup_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
  SELECT bucket, event_type, queue, error_kind, status, sum(n), sum(a)
    FROM (SELECT lazarus_rollup_bucket(created_at) AS bucket, event_type, queue, error_kind, status, 1 AS n, attempts::bigint AS a
            FROM new_rows
          UNION ALL
          SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, -1, -attempts::bigint FROM old_rows) c
   GROUP BY 1, 2, 3, 4, 5
  HAVING sum(n) <> 0 OR sum(a) <> 0;
  RETURN NULL;
END $$;

-- Updates: a row trigger that PostgreSQL considers only for UPDATEs that set one of these columns
-- (error_signature follows error_message), and runs only for rows whose group changed. Statement
-- triggers with transition tables cannot have column lists, and a statement trigger for every
-- UPDATE would cost each status change a pass over its rows. Such updates are rare (a producer
-- correcting rows in SQL); each changed row appends a -1 and a +1.
CREATE FUNCTION "tg_dead_letters__signature_rollup_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
  VALUES (lazarus_rollup_bucket(OLD.created_at), OLD.error_signature, OLD.event_type, OLD.queue, OLD.error_kind, -1),
         (lazarus_rollup_bucket(NEW.created_at), NEW.error_signature, NEW.event_type, NEW.queue, NEW.error_kind, 1);
  RETURN NULL;
END $$;

CREATE TRIGGER "tg_dead_letters__signature_rollup_update"
  AFTER UPDATE OF "error_message", "event_type", "queue", "error_kind", "created_at" ON "dead_letters"
  FOR EACH ROW
  WHEN ((lazarus_rollup_bucket(OLD.created_at), OLD.error_signature, OLD.event_type, OLD.queue, OLD.error_kind)
        IS DISTINCT FROM (lazarus_rollup_bucket(NEW.created_at), NEW.error_signature, NEW.event_type, NEW.queue, NEW.error_kind))
  EXECUTE FUNCTION "tg_dead_letters__signature_rollup_update"();

-- Compaction folds both ledgers; returns the rows removed from both.
CREATE OR REPLACE FUNCTION "lazarus_compact_rollups"() RETURNS bigint LANGUAGE sql AS $$
  WITH groups AS (
    SELECT bucket, event_type, queue, error_kind, status FROM dead_letter_rollups
     GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 OR (sum(count) = 0 AND sum(attempts) = 0)
  ), gone AS (
    DELETE FROM dead_letter_rollups r USING groups g
     WHERE r.bucket = g.bucket AND r.event_type = g.event_type AND r.queue = g.queue
       AND r.error_kind = g.error_kind AND r.status = g.status
    RETURNING r.*
  ), merged AS (
    INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
    SELECT bucket, event_type, queue, error_kind, status, sum(count), sum(attempts) FROM gone
     GROUP BY 1, 2, 3, 4, 5 HAVING sum(count) <> 0 OR sum(attempts) <> 0
    RETURNING 1
  ), signature_groups AS (
    SELECT bucket, error_signature, event_type, queue, error_kind FROM dead_letter_signature_rollups
     GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 OR sum(count) = 0
  ), signature_gone AS (
    DELETE FROM dead_letter_signature_rollups r USING signature_groups g
     WHERE r.bucket = g.bucket AND r.error_signature = g.error_signature AND r.event_type = g.event_type
       AND r.queue = g.queue AND r.error_kind = g.error_kind
    RETURNING r.*
  ), signature_merged AS (
    INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
    SELECT bucket, error_signature, event_type, queue, error_kind, sum(count) FROM signature_gone
     GROUP BY 1, 2, 3, 4, 5 HAVING sum(count) <> 0
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM gone) - (SELECT count(*) FROM merged)
       + (SELECT count(*) FROM signature_gone) - (SELECT count(*) FROM signature_merged)
$$;

-- The retry figures read SUCCEEDED and EXHAUSTED (and PENDING) groups: the status index covers
-- attempts too, so they stay index-only.
DROP INDEX "dead_letter_rollups_status_idx";
CREATE INDEX "dead_letter_rollups_status_idx" ON "dead_letter_rollups" ("status", "bucket") INCLUDE ("event_type", "queue", "error_kind", "count", "attempts");

-- The sample of a signature is now its first seen event (the oldest, as the API describes it),
-- not the lowest id; the views say the same as the API. Each group finds it with one descent of
-- dead_letters_error_signature_idx.
CREATE OR REPLACE VIEW "lazarus_failures_last_24h" AS
SELECT g.event_type, g.error_kind, g.error_signature, g.failures, g.first_seen, g.last_seen, s.id AS sample_id
  FROM (SELECT event_type, error_kind, error_signature, count(*) AS failures, min(created_at) AS first_seen, max(created_at) AS last_seen
          FROM dead_letters
         WHERE created_at >= now() - interval '24 hours'
         GROUP BY event_type, error_kind, error_signature) g
 CROSS JOIN LATERAL (SELECT d.id FROM dead_letters d
                      WHERE d.error_signature = g.error_signature AND d.created_at = g.first_seen
                        AND d.event_type = g.event_type AND d.error_kind = g.error_kind
                      ORDER BY d.id LIMIT 1) s
 ORDER BY g.failures DESC, g.event_type, g.error_signature;

CREATE OR REPLACE VIEW "lazarus_top_errors" AS
SELECT g.error_signature, g.failures, g.first_seen, g.last_seen, s.id AS sample_id, g.unresolved
  FROM (SELECT error_signature, count(*) AS failures, min(created_at) AS first_seen, max(created_at) AS last_seen,
               count(*) FILTER (WHERE status IN ('PENDING', 'PROCESSING', 'EXHAUSTED')) AS unresolved
          FROM dead_letters
         GROUP BY error_signature) g
 CROSS JOIN LATERAL (SELECT d.id FROM dead_letters d
                      WHERE d.error_signature = g.error_signature AND d.created_at = g.first_seen
                      ORDER BY d.id LIMIT 1) s
 ORDER BY g.failures DESC, g.error_signature;

-- DLQ depth from the rollups instead of counting the table: the events per status summed, and the
-- oldest of each read from the first hour whose rollups still hold one (an hour of rows at most).
CREATE OR REPLACE VIEW "lazarus_dlq_depth" AS
SELECT h.status, h.events, o.oldest_created_at
  FROM (SELECT status, sum(events)::bigint AS events, min(bucket) AS first_bucket
          FROM (SELECT status, bucket, sum(count) AS events FROM dead_letter_rollups
                 GROUP BY status, bucket HAVING sum(count) <> 0) b
         GROUP BY status) h
 CROSS JOIN LATERAL (SELECT min(d.created_at) AS oldest_created_at FROM dead_letters d
                      WHERE d.status = h.status AND d.created_at >= h.first_bucket
                        AND d.created_at < h.first_bucket + interval '1 hour') o
 ORDER BY h.status;

-- Backfill: recount the ledger with attempts, and fill the signature ledger. The lock keeps
-- writers out until this transaction commits, so every row is counted exactly once.
LOCK TABLE "dead_letters" IN SHARE ROW EXCLUSIVE MODE;
TRUNCATE "dead_letter_rollups";
INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, count(*), sum(attempts)
  FROM dead_letters GROUP BY 1, 2, 3, 4, 5;
INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
SELECT lazarus_rollup_bucket(created_at), error_signature, event_type, queue, error_kind, count(*)
  FROM dead_letters GROUP BY 1, 2, 3, 4, 5;
