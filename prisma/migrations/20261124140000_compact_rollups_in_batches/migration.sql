-- Rollup compaction in short batches.
--
-- lazarus_compact_rollups() folds the whole ledger in one statement: with ~90k ledger rows it held a
-- transaction open for ~190 ms. The live feed reads only changes below the oldest open transaction
-- of this database, so every event committed meanwhile waited for it (feed p99 ~200 ms under 1,000
-- inserts/s, issue "periodic work stalls the feed"). These functions fold only the groups of the
-- next `max_rows` ledger rows after `after_id` (a watermark the service keeps): a batch touches at
-- most that many groups, all rows of each, and ends. The service calls them until a batch comes
-- back short (fewer than `max_rows` rows after the watermark: caught up). Folded rows get new ids above the watermark, so the next batch sees them again, as
-- single rows of their group, and leaves them be: each batch moves the watermark forward.
-- Both are safe alongside writers and other instances (a group's rows are deleted and their sum
-- inserted in one statement; a second compactor deletes nothing it did not see). Returns the last
-- ledger id looked at (null when none), how many rows it looked at, and how many it removed.

CREATE FUNCTION "lazarus_compact_rollups_batch"(after_id bigint, max_rows int, OUT last_id bigint, OUT scanned int, OUT removed bigint)
LANGUAGE sql AS $$
  WITH recent AS (
    SELECT id, bucket, event_type, queue, error_kind, status FROM dead_letter_rollups
     WHERE id > after_id ORDER BY id LIMIT max_rows
  ), keys AS (
    SELECT DISTINCT bucket, event_type, queue, error_kind, status FROM recent
  ), groups AS (
    SELECT r.bucket, r.event_type, r.queue, r.error_kind, r.status FROM dead_letter_rollups r JOIN keys k USING (bucket, event_type, queue, error_kind, status)
     GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 OR (sum(r.count) = 0 AND sum(r.attempts) = 0)
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
  )
  SELECT (SELECT max(id) FROM recent), (SELECT count(*)::int FROM recent), (SELECT count(*) FROM gone) - (SELECT count(*) FROM merged)
$$;

CREATE FUNCTION "lazarus_compact_signature_rollups_batch"(after_id bigint, max_rows int, OUT last_id bigint, OUT scanned int, OUT removed bigint)
LANGUAGE sql AS $$
  WITH recent AS (
    SELECT id, bucket, error_signature, event_type, queue, error_kind FROM dead_letter_signature_rollups
     WHERE id > after_id ORDER BY id LIMIT max_rows
  ), keys AS (
    SELECT DISTINCT bucket, error_signature, event_type, queue, error_kind FROM recent
  ), groups AS (
    SELECT r.bucket, r.error_signature, r.event_type, r.queue, r.error_kind FROM dead_letter_signature_rollups r JOIN keys k USING (bucket, error_signature, event_type, queue, error_kind)
     GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 OR sum(r.count) = 0
  ), gone AS (
    DELETE FROM dead_letter_signature_rollups r USING groups g
     WHERE r.bucket = g.bucket AND r.error_signature = g.error_signature AND r.event_type = g.event_type
       AND r.queue = g.queue AND r.error_kind = g.error_kind
    RETURNING r.*
  ), merged AS (
    INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
    SELECT bucket, error_signature, event_type, queue, error_kind, sum(count) FROM gone
     GROUP BY 1, 2, 3, 4, 5 HAVING sum(count) <> 0
    RETURNING 1
  )
  SELECT (SELECT max(id) FROM recent), (SELECT count(*)::int FROM recent), (SELECT count(*) FROM gone) - (SELECT count(*) FROM merged)
$$;
