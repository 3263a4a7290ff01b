-- lazarus_error_text_matches (migration 20261122140000_error_text_matches) collects the events whose
-- error text contains a pattern, through the side table's trigram indexes. Its query is planned for
-- an unknown pattern, for which PostgreSQL guesses 100,000 matches at 10M events, and so planned a
-- parallel bitmap heap scan with two workers. On the two cores of this machine kind that made the
-- collection 3-5x slower than the same query run alone (10,000 matches at 10M events, every page in
-- shared buffers: 127-236 ms against 36-44 ms): each launch starts worker processes, and a worker
-- touches the shared buffers it reads for the first time. The matches of a search are a short,
-- index-driven read, so the function now runs its query without parallel workers.
-- CREATE OR REPLACE of a function takes no table lock; writers do not wait for it.
CREATE OR REPLACE FUNCTION lazarus_error_text_matches(pattern text, cap int) RETURNS SETOF bigint
LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000
SET enable_seqscan = off
SET max_parallel_workers_per_gather = 0
AS $$
  SELECT t.dead_letter_id FROM dead_letter_error_texts t
   WHERE t.error_message ILIKE pattern OR t.error_stack ILIKE pattern
   LIMIT cap
$$;
