-- Retention deletes finished events whose resolved_at is older than the retention age, oldest
-- first, a batch at a time (src/db/sql/purgeFinishedDeadLetters.ts). Nothing indexed resolved_at,
-- so each batch scanned the whole table and sorted its finished rows: 3 s per batch at 1M rows,
-- for every batch of every purge. This index holds only finished events, so the status changes of
-- the retry engine's claim and of retries write nothing to it; each event enters it once, when it
-- finishes.
CREATE INDEX "dead_letters_finished_idx" ON "dead_letters" ("resolved_at")
 WHERE "status" IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED');
