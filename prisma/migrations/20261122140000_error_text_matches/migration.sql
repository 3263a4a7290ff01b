-- Error-text search asks the side table's trigram indexes for the events whose message or stack
-- contains a text (step 2 of src/db/sql/errorTextPage.ts). PostgreSQL prices ILIKE like any cheap
-- operator, so on a side table of up to a few hundred thousand rows it plans a sequential scan
-- that runs ILIKE over every message and stack: 44 ms at 50,000 rows for a rare text, against
-- 4 ms through the trigram indexes, and more than at 1,000,000 rows, where it does use them. This
-- function runs that query with sequential scans switched off, so the indexes serve it at every
-- size. A function with a SET clause is never inlined into its caller, which is what keeps the
-- setting to this one query.
CREATE FUNCTION lazarus_error_text_matches(pattern text, cap int) RETURNS SETOF bigint
LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000
SET enable_seqscan = off
AS $$
  SELECT t.dead_letter_id FROM dead_letter_error_texts t
   WHERE t.error_message ILIKE pattern OR t.error_stack ILIKE pattern
   LIMIT cap
$$;
