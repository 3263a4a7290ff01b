-- Read side: error signatures, indexes for every order and filter of `deadLetters`, and views for
-- people who live in psql or Grafana.

-- An error signature is the message with the parts that differ between occurrences of the same
-- failure replaced: uuids, timestamps, hex ids, then numbers. IMMUTABLE (regexp_replace is), so it
-- can back a stored generated column: it can never disagree with the message, whoever writes it.
CREATE FUNCTION "lazarus_error_signature"(message text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
  SELECT left(
    regexp_replace(
      regexp_replace(
        regexp_replace(
          regexp_replace(message,
            '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', '<uuid>', 'gi'),
          '\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?', '<ts>', 'gi'),
        '\m(0x[0-9a-f]+|[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*|[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*)\M', '<hex>', 'gi'),
      '\m\d+(\.\d+)?', '<n>', 'g'),
    300)
$$;

ALTER TABLE "dead_letters"
  ADD COLUMN "error_signature" TEXT GENERATED ALWAYS AS ("lazarus_error_signature"("error_message")) STORED;

CREATE INDEX "dead_letters_error_signature_idx" ON "dead_letters" ("error_signature", "created_at");

-- errorText is a case-insensitive substring match over message OR stack: with a trigram index on
-- each, PostgreSQL answers it with a BitmapOr of two index scans, never a sequential scan.
CREATE INDEX "dead_letters_error_stack_trgm" ON "dead_letters" USING GIN ("error_stack" gin_trgm_ops);

-- Keyset pagination walks (sort key, id) in both directions; one index per order.
CREATE INDEX "dead_letters_attempts_idx" ON "dead_letters" ("attempts", "id");
CREATE INDEX "dead_letters_next_attempt_order_idx" ON "dead_letters" ((coalesce("next_attempt_at", 'infinity'::timestamptz)), "id");

-- Views ---------------------------------------------------------------------------------------

-- What failed in the last 24 hours, by event type and error.
CREATE VIEW "lazarus_failures_last_24h" AS
SELECT event_type, error_kind, error_signature,
       count(*) AS failures, min(created_at) AS first_seen, max(created_at) AS last_seen, min(id) AS sample_id
  FROM dead_letters
 WHERE created_at >= now() - interval '24 hours'
 GROUP BY event_type, error_kind, error_signature
 ORDER BY failures DESC, event_type, error_signature;

-- Top error signatures over everything still stored.
CREATE VIEW "lazarus_top_errors" AS
SELECT error_signature, count(*) AS failures, min(created_at) AS first_seen, max(created_at) AS last_seen,
       min(id) AS sample_id, count(*) FILTER (WHERE status IN ('PENDING', 'PROCESSING', 'EXHAUSTED')) AS unresolved
  FROM dead_letters
 GROUP BY error_signature
 ORDER BY failures DESC, error_signature;

-- Ordering keys whose head (first unfinished event by ordering_seq, id) is EXHAUSTED and holds
-- later events back.
CREATE VIEW "lazarus_blocked_keys" AS
WITH live AS (
  SELECT id, ordering_key, ordering_seq, status, event_type, error_signature, created_at
    FROM dead_letters
   WHERE ordering_key IS NOT NULL AND status NOT IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED')
), heads AS (
  SELECT DISTINCT ON (ordering_key) * FROM live ORDER BY ordering_key, ordering_seq, id
)
SELECT h.ordering_key, h.id AS head_id, h.event_type AS head_event_type, h.error_signature AS head_error_signature,
       h.created_at AS head_created_at, (SELECT count(*) FROM live l WHERE l.ordering_key = h.ordering_key) - 1 AS held_back
  FROM heads h
 WHERE h.status = 'EXHAUSTED'
   AND EXISTS (SELECT 1 FROM live l WHERE l.ordering_key = h.ordering_key AND l.id <> h.id)
 ORDER BY held_back DESC, h.ordering_key;

-- DLQ depth by status, with the oldest event in each.
CREATE VIEW "lazarus_dlq_depth" AS
SELECT status, count(*) AS events, min(created_at) AS oldest_created_at
  FROM dead_letters
 GROUP BY status
 ORDER BY status;
