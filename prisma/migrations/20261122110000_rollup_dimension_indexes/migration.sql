-- A count or stats request filtered by one dimension (an event type, a status, a queue, an error
-- kind) read every rollup row and kept the matching ones: at 1M seeded events that is ~86k rows
-- and 16 ms for `deadLetters(filter: { eventTypes: [...] }) { totalCount }`. One covering index
-- per dimension lets PostgreSQL read only that dimension's rows, index-only: ~1 ms. Rollup rows
-- are few and written a handful per statement, so the extra writes are small.

CREATE INDEX "dead_letter_rollups_event_type_idx" ON "dead_letter_rollups" ("event_type", "bucket") INCLUDE ("status", "queue", "error_kind", "count");
CREATE INDEX "dead_letter_rollups_status_idx" ON "dead_letter_rollups" ("status", "bucket") INCLUDE ("event_type", "queue", "error_kind", "count");
CREATE INDEX "dead_letter_rollups_queue_idx" ON "dead_letter_rollups" ("queue", "bucket") INCLUDE ("status", "event_type", "error_kind", "count");
CREATE INDEX "dead_letter_rollups_error_kind_idx" ON "dead_letter_rollups" ("error_kind", "bucket") INCLUDE ("status", "event_type", "queue", "count");
