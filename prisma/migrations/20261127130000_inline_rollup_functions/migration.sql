-- Two helpers that every state transition calls per row (the rollup bucket and "is unresolved",
-- 6 calls per delivered event in the retry loop, more at ingest) were never inlined by the
-- planner, so each call ran as its own SQL-function execution, ~1.7 us apiece
-- (docs/benchmarks.md, "Session 15 — drain"):
--  * lazarus_rollup_bucket was declared IMMUTABLE around date_trunc(text, timestamptz, text), which
--    is STABLE; PostgreSQL does not inline a function whose body is more volatile than its
--    declaration. The same hour, computed from immutable parts: identical for every timestamptz
--    (UTC has no daylight saving), whatever the session's TimeZone.
--  * lazarus_is_unresolved was STRICT, and PostgreSQL inlines a strict SQL function only when it
--    can prove the body strict; an IN list over an enum it cannot. Without STRICT the body gives
--    the same answer (NULL for NULL).
CREATE OR REPLACE FUNCTION "lazarus_rollup_bucket"(created_at timestamptz) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' $$;

CREATE OR REPLACE FUNCTION "lazarus_is_unresolved"(status "DeadLetterStatus") RETURNS int
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT (status IN ('PENDING', 'PROCESSING', 'EXHAUSTED'))::int $$;
