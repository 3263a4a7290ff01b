-- The four read-side indexes of dead_letter_states leave out PROCESSING rows.
--
-- A claim turns a PENDING state row PROCESSING and its completion turns it SUCCEEDED (or FAILED).
-- Neither update can be HOT (status and updated_at are indexed), so each used to add an entry to
-- every index on the table. A PROCESSING row version now enters none of these four, so a claim
-- writes four index entries fewer. Measured with bench:retry:hot-table on PostgreSQL 15
-- (docs/benchmarks.md, "Session 15 — drain"): WAL records per delivered event 24 -> 19, backend
-- CPU 92 -> 80 us.
--
-- PROCESSING rows are few (the leases held) and dead_letter_states_lease_idx holds all of them.
-- The read side finds them there: a page in one of these orders reads them in a second branch and
-- merges (src/db/sql/deadLetterPage.ts), and a filter on updated_at or attempts that admits
-- PROCESSING says so in a form the planner can split over both indexes (deadLetterWhere.ts).
-- A query whose status filter leaves PROCESSING out uses the partial index as before.
DROP INDEX "dead_letter_states_status_next_attempt_idx";
DROP INDEX "dead_letter_states_updated_idx";
DROP INDEX "dead_letter_states_attempts_idx";
DROP INDEX "dead_letter_states_next_attempt_order_idx";

CREATE INDEX "dead_letter_states_status_next_attempt_idx" ON "dead_letter_states" ("status", "next_attempt_at", "id") WHERE "status" <> 'PROCESSING';
CREATE INDEX "dead_letter_states_updated_idx" ON "dead_letter_states" ("updated_at", "id") WHERE "status" <> 'PROCESSING';
CREATE INDEX "dead_letter_states_attempts_idx" ON "dead_letter_states" ("attempts", "id") WHERE "status" <> 'PROCESSING';
CREATE INDEX "dead_letter_states_next_attempt_order_idx" ON "dead_letter_states" ((coalesce("next_attempt_at", 'infinity'::timestamptz)), "id") WHERE "status" <> 'PROCESSING';
