-- Ingest after the queue-state split: what a row costs its producer (issue 20's bench:ingest
-- bar; numbers in docs/benchmarks.md, "Session 15: ingest after the split").

-- The message signature, once per row. It was a STORED generated column, and the error-group row
-- trigger computed it a second time: a BEFORE trigger runs before generated columns are computed.
-- Now a BEFORE trigger fills the column and the group trigger reads it. DROP EXPRESSION keeps every
-- stored value and rewrites nothing. Producers still cannot set it wrongly: the trigger overwrites
-- whatever an INSERT or an UPDATE of error_signature or error_message brings (a generated column
-- refused such an INSERT instead). PostgreSQL fires BEFORE row triggers in name order, and
-- "derive_signature" sorts before "error_group_id", which reads the signature. A separate trigger,
-- not the group trigger, so the table keeps its signature with the group triggers disabled
-- (bench:groups measures groups that way); one trigger for both measured no cheaper.
ALTER TABLE "dead_letters" ALTER COLUMN "error_signature" DROP EXPRESSION;

CREATE FUNCTION "tg_dead_letters__derive_signature"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.error_signature := lazarus_error_signature(NEW.error_message);
  RETURN NEW;
END $$;
CREATE TRIGGER "tg_dead_letters__derive_signature"
  BEFORE INSERT OR UPDATE OF "error_message", "error_signature"
  ON "dead_letters" FOR EACH ROW EXECUTE FUNCTION "tg_dead_letters__derive_signature"();

CREATE OR REPLACE FUNCTION "tg_dead_letters__error_group_id"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.error_group_id := lazarus_error_group_id(NEW.event_type, NEW.error_kind,
                          lazarus_group_signature(NEW.fingerprint, NEW.error_signature, NEW.error_stack));
  RETURN NEW;
END $$;

-- Per-row SQL functions the planner can inline. A SQL function declared IMMUTABLE whose body calls
-- a STABLE one is never inlined, and each call then runs through the SQL-function executor:
-- lazarus_error_group_id casts the enum to text (enum_out is STABLE), lazarus_rollup_bucket calls
-- date_trunc with a time zone (STABLE). Once for each inserted row, three times for the rollup and
-- group ledgers. STABLE says what they are; no index or generated column uses them.
ALTER FUNCTION "lazarus_error_group_id"(text, "ErrorKind", text) STABLE;
ALTER FUNCTION "lazarus_rollup_bucket"(timestamptz) STABLE;
