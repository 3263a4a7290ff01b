-- The claim reads due rows per deliverable event type instead of scanning every due row in time
-- order and asking each one whether its type may be delivered. PENDING rows of a paused type, or
-- of a type with no target, stay PENDING (held, not burned); with the old index every claim — one
-- per change hint — walked all of them, so a large held backlog made each claim cost O(backlog).
-- The new index is ordered by type first: the claim enumerates the pending types with one index
-- descent each and reads only deliverable ones. It replaces dead_letters_due_idx, whose other use
-- (the oldest-due metric) dead_letters_status_next_attempt_idx serves as well.

DROP INDEX "dead_letters_due_idx";
CREATE INDEX "dead_letters_pending_type_idx" ON "dead_letters" ("event_type", "next_attempt_at", "id") WHERE "status" = 'PENDING';
