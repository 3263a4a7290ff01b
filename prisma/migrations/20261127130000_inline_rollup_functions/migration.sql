-- lazarus_is_unresolved, called per row by every state transition (4 calls per delivered event in
-- the retry loop), was never inlined by the planner: it was STRICT, and PostgreSQL inlines a strict
-- SQL function only when it can prove the body strict, which an IN list over an enum it cannot.
-- Each call then ran as its own SQL-function execution, ~1.7 us apiece (docs/benchmarks.md,
-- "Session 15 — drain"). Without STRICT the body gives the same answer (NULL for NULL).
-- lazarus_rollup_bucket (2 calls per delivered event) was declared IMMUTABLE around the STABLE
-- date_trunc(text, timestamptz, text), so it was not inlined either; 20261127110000 declared it
-- STABLE. Here it gets a body built from immutable parts instead, the same hour for every
-- timestamptz whatever the session's TimeZone (UTC has no daylight saving), so it is inlined and
-- stays IMMUTABLE (usable in an index expression).
CREATE OR REPLACE FUNCTION "lazarus_rollup_bucket"(created_at timestamptz) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' $$;

CREATE OR REPLACE FUNCTION "lazarus_is_unresolved"(status "DeadLetterStatus") RETURNS int
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT (status IN ('PENDING', 'PROCESSING', 'EXHAUSTED'))::int $$;
