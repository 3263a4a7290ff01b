-- Rollup compaction finds a group's rows by its whole key (issue 36, "a live tail that holds under
-- load"). lazarus_compact_rollups_batch looks up the groups of 200 ledger rows, then deletes their
-- rows; with only (bucket) and the per-dimension (dimension, bucket) indexes, each lookup read every
-- group of its hour and status (or event type), and every entry earlier compactions had deleted that
-- VACUUM had not yet removed: 18,600 buffers for a batch of 200 rows at 1M events, ~1 s under load,
-- all of it holding the live feed's horizon. On the whole key it read 1,900 (bench:live).
-- The new index leads with bucket, so it also serves every read the (bucket) index served, which
-- it replaces: producers' rollup deltas still update as many indexes as before.
-- Building it takes a SHARE lock on dead_letter_rollups, which holds producers' rollup deltas (every
-- ingest statement) for the build: the table has a row per hour and group, not per event (~110,000
-- rows at 1M events; the build took 1.2 s there, on this 2-core machine at load ~20).
CREATE INDEX "dead_letter_rollups_group_idx" ON "dead_letter_rollups" ("bucket", "event_type", "queue", "error_kind", "status");
DROP INDEX "dead_letter_rollups_bucket_idx";
