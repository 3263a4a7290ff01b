-- Delivery rollups (issue 35, "delivery charts"): delivery attempts counted per UTC minute of
-- started_at, event type, target, outcome and latency bucket, so the console's deliveries per minute,
-- success rate and p50/p95 response time per event type and per target read a few thousand rollup
-- rows instead of scanning delivery_attempts.
--
-- A ledger of signed deltas like dead_letter_rollups (20261121160000_stats_rollups): a statement-level
-- trigger APPENDS one row per group each inserting statement touched, so concurrent retry workers
-- never wait on a counter row; a group's count is the SUM of its rows, and
-- lazarus_compact_delivery_rollups_batch folds them. Attempts are only ever inserted (their rows are
-- never updated); deleting an event deletes its attempts, but the deliveries happened, so the rollup
-- keeps counting them, as a metrics counter would. TRUNCATE of delivery_attempts empties it. The
-- service trims minutes older than two days (src/domain/deliveryRollups.ts): the charts read one.
--
-- Percentiles cannot be summed, so each attempt's duration lands in one of 77 fixed, log-spaced
-- buckets (bounds round(2^(k/4)) ms, deduplicated: 1, 2, 3, …, 8, 10, 11, 13, 16, 19, …, 1048576). The
-- reads take the bucket that holds the p-th attempt and report its midpoint: within 9.5% of the true
-- nearest-rank percentile up to 1,048,576 ms, exact below 8 ms. The same bounds are
-- LATENCY_BOUNDS_MS in src/domain/deliveryRollups.ts (test/read.deliveryRollups.test.ts checks both
-- agree).
--
-- Expand only (docs/migrations.md): a new table and a trigger. CREATE TRIGGER takes SHARE ROW
-- EXCLUSIVE on delivery_attempts for the migration's few milliseconds (retry workers' attempt inserts
-- wait that long); no other table is locked. Attempts made before the upgrade are not counted: the
-- charts fill as attempts are made (a backfill would scan delivery_attempts under that lock).

CREATE TABLE "delivery_attempt_rollups" (
    "id" BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    "bucket" TIMESTAMPTZ(6) NOT NULL,
    "event_type" TEXT NOT NULL,
    -- '' for attempts that recorded no target (in-process handlers, lost leases).
    "target" TEXT NOT NULL,
    "outcome" "AttemptOutcome" NOT NULL,
    "latency_bucket" SMALLINT NOT NULL,
    "count" BIGINT NOT NULL
);

-- Every read is a range of minutes: index-only with the other columns included.
CREATE INDEX "delivery_attempt_rollups_bucket_idx" ON "delivery_attempt_rollups" ("bucket")
  INCLUDE ("event_type", "target", "outcome", "latency_bucket", "count");

COMMENT ON TABLE "delivery_attempt_rollups" IS
  'Signed deltas of delivery attempts per UTC minute of started_at, event type, target, outcome and latency bucket; sum(count) per group. Counts attempts made, including those of events deleted since; minutes older than two days are trimmed.';

-- The UTC minute, built from immutable parts (as lazarus_rollup_bucket), so it is inlined.
CREATE FUNCTION "lazarus_attempt_minute"(started_at timestamptz) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT date_trunc('minute', started_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' $$;

-- 0 for under 1 ms, i for bounds[i] <= ms < bounds[i+1], 76 from 1048576 ms on.
CREATE FUNCTION "lazarus_latency_bucket"(duration_ms int) RETURNS smallint
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT width_bucket(duration_ms, '{1,2,3,4,5,6,7,8,10,11,13,16,19,23,27,32,38,45,54,64,76,91,108,128,152,181,215,256,304,362,431,512,609,724,861,1024,1218,1448,1722,2048,2435,2896,3444,4096,4871,5793,6889,8192,9742,11585,13777,16384,19484,23170,27554,32768,38968,46341,55109,65536,77936,92682,110218,131072,155872,185364,220436,262144,311744,370728,440872,524288,623487,741455,881744,1048576}'::int[])::smallint $$;

-- The event type comes from the attempt's event, by primary key (the foreign key guarantees it).
CREATE FUNCTION "tg_delivery_attempts__rollup_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO delivery_attempt_rollups (bucket, event_type, target, outcome, latency_bucket, count)
  SELECT lazarus_attempt_minute(a.started_at), d.event_type, coalesce(a.target, ''), a.outcome, lazarus_latency_bucket(a.duration_ms), count(*)
    FROM new_rows a JOIN dead_letters d ON d.id = a.dead_letter_id
   GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;

CREATE FUNCTION "tg_delivery_attempts__rollup_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE delivery_attempt_rollups;
  RETURN NULL;
END $$;

CREATE TRIGGER "tg_delivery_attempts__rollup_insert" AFTER INSERT ON "delivery_attempts"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_delivery_attempts__rollup_insert"();
CREATE TRIGGER "tg_delivery_attempts__rollup_truncate" AFTER TRUNCATE ON "delivery_attempts"
  FOR EACH STATEMENT EXECUTE FUNCTION "tg_delivery_attempts__rollup_truncate"();

-- Folds the groups of the next `max_rows` ledger rows after `after_id` into one row each (none when
-- a group sums to 0), exactly as lazarus_compact_rollups_batch (20261124140000): one short statement,
-- safe alongside writers and other compactors.
CREATE FUNCTION "lazarus_compact_delivery_rollups_batch"(after_id bigint, max_rows int, OUT last_id bigint, OUT scanned int, OUT removed bigint)
LANGUAGE sql AS $$
  WITH recent AS (
    SELECT id, bucket, event_type, target, outcome, latency_bucket FROM delivery_attempt_rollups
     WHERE id > after_id ORDER BY id LIMIT max_rows
  ), keys AS (
    SELECT DISTINCT bucket, event_type, target, outcome, latency_bucket FROM recent
  ), groups AS (
    SELECT r.bucket, r.event_type, r.target, r.outcome, r.latency_bucket FROM delivery_attempt_rollups r
      JOIN keys k USING (bucket, event_type, target, outcome, latency_bucket)
     GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 OR sum(r.count) = 0
  ), gone AS (
    DELETE FROM delivery_attempt_rollups r USING groups g
     WHERE r.bucket = g.bucket AND r.event_type = g.event_type AND r.target = g.target
       AND r.outcome = g.outcome AND r.latency_bucket = g.latency_bucket
    RETURNING r.*
  ), merged AS (
    INSERT INTO delivery_attempt_rollups (bucket, event_type, target, outcome, latency_bucket, count)
    SELECT bucket, event_type, target, outcome, latency_bucket, sum(count) FROM gone
     GROUP BY 1, 2, 3, 4, 5 HAVING sum(count) <> 0
    RETURNING 1
  )
  SELECT (SELECT max(id) FROM recent), (SELECT count(*)::int FROM recent), (SELECT count(*) FROM gone) - (SELECT count(*) FROM merged)
$$;
