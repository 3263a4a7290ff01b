-- The Lazarus database after every migration in prisma/migrations, printed by
-- `npm run schema:sql` (scripts/printSchemaSql.ts) with pg_dump --schema-only. Generated: edit a
-- migration, not this file. The migrator's own _prisma_migrations table is left out.
--
-- PostgreSQL database dump
--

--
-- Name: pg_trgm; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

--
-- Name: EXTENSION pg_trgm; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';

--
-- Name: ActionKind; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."ActionKind" AS ENUM (
    'RECORDED',
    'REQUEUED',
    'RESOLVED',
    'DISCARDED',
    'DELETED',
    'PAYLOAD_EDITED',
    'NOTE_ADDED',
    'PAUSED',
    'RESUMED',
    'PAYLOAD_TRANSFORMED',
    'TRANSFORM_UNDONE'
);

--
-- Name: AlertDeliveryStatus; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."AlertDeliveryStatus" AS ENUM (
    'PENDING',
    'DELIVERING',
    'DELIVERED',
    'FAILED',
    'SUPPRESSED'
);

--
-- Name: AlertFormat; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."AlertFormat" AS ENUM (
    'STANDARD',
    'SLACK'
);

--
-- Name: AlertTrigger; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."AlertTrigger" AS ENUM (
    'NEW_GROUP',
    'REGRESSION',
    'EXHAUSTED_RATE',
    'OLDEST_PENDING_AGE',
    'BACKLOG',
    'REDRIVE_PAUSED'
);

--
-- Name: AttemptOutcome; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."AttemptOutcome" AS ENUM (
    'SUCCEEDED',
    'FAILED',
    'PERMANENT_FAILURE',
    'TIMED_OUT',
    'LEASE_LOST'
);

--
-- Name: BackoffKind; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."BackoffKind" AS ENUM (
    'EXPONENTIAL',
    'LINEAR',
    'FIXED'
);

--
-- Name: DeadLetterStatus; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."DeadLetterStatus" AS ENUM (
    'PENDING',
    'PROCESSING',
    'SUCCEEDED',
    'EXHAUSTED',
    'RESOLVED',
    'DISCARDED'
);

--
-- Name: DeliveryFailureKind; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."DeliveryFailureKind" AS ENUM (
    'UNREACHABLE',
    'REJECTED',
    'TIMEOUT',
    'INVALID_TARGET'
);

--
-- Name: ErrorGroupStatus; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."ErrorGroupStatus" AS ENUM (
    'OPEN',
    'ACKNOWLEDGED',
    'RESOLVED',
    'IGNORED'
);

--
-- Name: ErrorKind; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."ErrorKind" AS ENUM (
    'DOWNSTREAM_API',
    'TIMEOUT',
    'VALIDATION',
    'SCHEMA_MISMATCH',
    'CRASH',
    'UNKNOWN'
);

--
-- Name: PatchKind; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."PatchKind" AS ENUM (
    'JSON_PATCH',
    'MERGE_PATCH'
);

--
-- Name: PermanentReason; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."PermanentReason" AS ENUM (
    'PERMANENT_STATUS_CODE',
    'PERMANENT_ERROR_KIND',
    'PERMANENT_ERROR',
    'INVALID_TARGET',
    'MAX_ATTEMPTS'
);

--
-- Name: RedriveActionKind; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."RedriveActionKind" AS ENUM (
    'STARTED',
    'PAUSED',
    'RESUMED',
    'CANCELLED',
    'FAILED',
    'COMPLETED'
);

--
-- Name: RedrivePausedBy; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."RedrivePausedBy" AS ENUM (
    'GUARD',
    'OPERATOR'
);

--
-- Name: RedriveStatus; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."RedriveStatus" AS ENUM (
    'RUNNING',
    'PAUSED',
    'CANCELLED',
    'COMPLETED',
    'FAILED'
);

--
-- Name: TransformStatus; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public."TransformStatus" AS ENUM (
    'PREPARING',
    'RUNNING',
    'APPLIED',
    'UNDOING',
    'UNDONE',
    'FAILED'
);

--
-- Name: lazarus_error_group_fold; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.lazarus_error_group_fold AS (
	group_id bigint,
	event_type text,
	error_kind public."ErrorKind",
	signature text,
	bucket timestamp with time zone,
	total bigint,
	unresolved bigint,
	failures bigint,
	requeued bigint,
	first_seen timestamp with time zone,
	last_seen timestamp with time zone,
	queues text[],
	sources text[],
	sample_id bigint
);

--
-- Name: lazarus_alert_digest_summary(text, public."AlertTrigger", integer, integer, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_alert_digest_summary(p_rule_name text, p_trigger public."AlertTrigger", p_cap integer, p_window_seconds integer, p_details jsonb) RETURNS text
    LANGUAGE sql STABLE
    AS $$
  SELECT left(format('%s more %s alerts suppressed by rule "%s" (at most %s per %s s); first: %s%s',
                     p_details->>'suppressed', p_trigger, p_rule_name, p_cap, p_window_seconds,
                     (SELECT string_agg(f->>'subject', ', ') FROM jsonb_array_elements(p_details->'first') f),
                     CASE WHEN (p_details->>'suppressed')::int > jsonb_array_length(p_details->'first') THEN ', …' ELSE '' END), 2000);
$$;

--
-- Name: lazarus_array_union(text[], text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_array_union(a text[], b text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT CASE WHEN b <@ a THEN a
              ELSE ARRAY(SELECT DISTINCT v FROM unnest(a || b) v ORDER BY v LIMIT 100) END
$$;

--
-- Name: lazarus_attempt_minute(timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_attempt_minute(started_at timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT date_trunc('minute', started_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' $$;

--
-- Name: lazarus_compact_delivery_rollups_batch(bigint, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_compact_delivery_rollups_batch(after_id bigint, max_rows integer, OUT last_id bigint, OUT scanned integer, OUT removed bigint) RETURNS record
    LANGUAGE sql
    AS $$
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

--
-- Name: lazarus_compact_rollups(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_compact_rollups() RETURNS bigint
    LANGUAGE sql
    AS $$
  WITH groups AS (
    SELECT bucket, event_type, queue, error_kind, status FROM dead_letter_rollups
     GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 OR (sum(count) = 0 AND sum(attempts) = 0)
  ), gone AS (
    DELETE FROM dead_letter_rollups r USING groups g
     WHERE r.bucket = g.bucket AND r.event_type = g.event_type AND r.queue = g.queue
       AND r.error_kind = g.error_kind AND r.status = g.status
    RETURNING r.*
  ), merged AS (
    INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
    SELECT bucket, event_type, queue, error_kind, status, sum(count), sum(attempts) FROM gone
     GROUP BY 1, 2, 3, 4, 5 HAVING sum(count) <> 0 OR sum(attempts) <> 0
    RETURNING 1
  ), signature_groups AS (
    SELECT bucket, error_signature, event_type, queue, error_kind FROM dead_letter_signature_rollups
     GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 OR sum(count) = 0
  ), signature_gone AS (
    DELETE FROM dead_letter_signature_rollups r USING signature_groups g
     WHERE r.bucket = g.bucket AND r.error_signature = g.error_signature AND r.event_type = g.event_type
       AND r.queue = g.queue AND r.error_kind = g.error_kind
    RETURNING r.*
  ), signature_merged AS (
    INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
    SELECT bucket, error_signature, event_type, queue, error_kind, sum(count) FROM signature_gone
     GROUP BY 1, 2, 3, 4, 5 HAVING sum(count) <> 0
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM gone) - (SELECT count(*) FROM merged)
       + (SELECT count(*) FROM signature_gone) - (SELECT count(*) FROM signature_merged)
$$;

--
-- Name: lazarus_compact_rollups_batch(bigint, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_compact_rollups_batch(after_id bigint, max_rows integer, OUT last_id bigint, OUT scanned integer, OUT removed bigint) RETURNS record
    LANGUAGE sql
    AS $$
  WITH recent AS (
    SELECT id, bucket, event_type, queue, error_kind, status FROM dead_letter_rollups
     WHERE id > after_id ORDER BY id LIMIT max_rows
  ), keys AS (
    SELECT DISTINCT bucket, event_type, queue, error_kind, status FROM recent
  ), groups AS (
    SELECT r.bucket, r.event_type, r.queue, r.error_kind, r.status FROM dead_letter_rollups r JOIN keys k USING (bucket, event_type, queue, error_kind, status)
     GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 OR (sum(r.count) = 0 AND sum(r.attempts) = 0)
  ), gone AS (
    DELETE FROM dead_letter_rollups r USING groups g
     WHERE r.bucket = g.bucket AND r.event_type = g.event_type AND r.queue = g.queue
       AND r.error_kind = g.error_kind AND r.status = g.status
    RETURNING r.*
  ), merged AS (
    INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
    SELECT bucket, event_type, queue, error_kind, status, sum(count), sum(attempts) FROM gone
     GROUP BY 1, 2, 3, 4, 5 HAVING sum(count) <> 0 OR sum(attempts) <> 0
    RETURNING 1
  )
  SELECT (SELECT max(id) FROM recent), (SELECT count(*)::int FROM recent), (SELECT count(*) FROM gone) - (SELECT count(*) FROM merged)
$$;

--
-- Name: lazarus_compact_signature_rollups_batch(bigint, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_compact_signature_rollups_batch(after_id bigint, max_rows integer, OUT last_id bigint, OUT scanned integer, OUT removed bigint) RETURNS record
    LANGUAGE sql
    AS $$
  WITH recent AS (
    SELECT id, bucket, error_signature, event_type, queue, error_kind FROM dead_letter_signature_rollups
     WHERE id > after_id ORDER BY id LIMIT max_rows
  ), keys AS (
    SELECT DISTINCT bucket, error_signature, event_type, queue, error_kind FROM recent
  ), groups AS (
    SELECT r.bucket, r.error_signature, r.event_type, r.queue, r.error_kind FROM dead_letter_signature_rollups r JOIN keys k USING (bucket, error_signature, event_type, queue, error_kind)
     GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 OR sum(r.count) = 0
  ), gone AS (
    DELETE FROM dead_letter_signature_rollups r USING groups g
     WHERE r.bucket = g.bucket AND r.error_signature = g.error_signature AND r.event_type = g.event_type
       AND r.queue = g.queue AND r.error_kind = g.error_kind
    RETURNING r.*
  ), merged AS (
    INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
    SELECT bucket, error_signature, event_type, queue, error_kind, sum(count) FROM gone
     GROUP BY 1, 2, 3, 4, 5 HAVING sum(count) <> 0
    RETURNING 1
  )
  SELECT (SELECT max(id) FROM recent), (SELECT count(*)::int FROM recent), (SELECT count(*) FROM gone) - (SELECT count(*) FROM merged)
$$;

--
-- Name: lazarus_delta_signature(text, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_delta_signature(fingerprint text, error_signature text, error_stack text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$SELECT lazarus_group_signature(fingerprint, error_signature, error_stack)$$;

--
-- Name: lazarus_error_group_id(text, public."ErrorKind", text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_error_group_id(event_type text, error_kind public."ErrorKind", signature text) RETURNS bigint
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    AS $$
  SELECT ('x' || left(md5(length(event_type)::text || ':' || event_type || '|' || error_kind::text || '|' || signature), 16))::bit(64)::bigint
         & 9223372036854775807
$$;

--
-- Name: lazarus_error_signature(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_error_signature(message text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
  SELECT left(
    regexp_replace(
      regexp_replace(
        regexp_replace(
          regexp_replace(message,
            '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', '<uuid>', 'gi'),
          '\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?', '<ts>', 'gi'),
        '\m(0x[0-9a-f]+|[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*|[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*)\M', '<hex>', 'gi'),
      '\m\d+(\.\d+)?', '<n>', 'g'),
    300)
$$;

--
-- Name: lazarus_error_text_matches(text, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_error_text_matches(pattern text, cap integer) RETURNS SETOF bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    SET enable_seqscan TO 'off'
    SET max_parallel_workers_per_gather TO '0'
    AS $$
  SELECT t.dead_letter_id FROM dead_letter_error_texts t
   WHERE t.error_message ILIKE pattern OR t.error_stack ILIKE pattern
   LIMIT cap
$$;

--
-- Name: lazarus_expect_rows(bigint, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_expect_rows(expected bigint, actual bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF expected >= 0 AND expected <> actual THEN
    RAISE EXCEPTION 'lazarus: expected to change % rows, changed %', expected, actual USING ERRCODE = 'LZ409';
  END IF;
  RETURN actual;
END;
$$;

--
-- Name: lazarus_fold_error_groups(integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_fold_error_groups(max_rows integer, OUT taken integer, OUT changed integer) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
  batch lazarus_error_group_fold[];
  created BIGINT[];
  regressed BIGINT[];
  win TIMESTAMPTZ := date_trunc('hour', now(), 'UTC') - interval '23 hours';
  old_win TIMESTAMPTZ;
BEGIN
  taken := 0;
  changed := 0;
  IF NOT pg_try_advisory_xact_lock(4757231860019247) THEN
    taken := -1;
    RETURN;
  END IF;

  -- Slide the trend window to this hour's (see the top of this migration) before counting the batch.
  SELECT start INTO old_win FROM error_group_trend_window;
  IF old_win IS NULL THEN
    UPDATE error_groups g SET trend_count = h.n
      FROM (SELECT g2.id, coalesce((SELECT sum(h2.count) FROM error_group_hours h2 WHERE h2.group_id = g2.id AND h2.bucket >= win), 0) AS n
              FROM error_groups g2) h
     WHERE g.id = h.id AND g.trend_count <> h.n;
    INSERT INTO error_group_trend_window (start) VALUES (win);
  ELSIF old_win <> win THEN
    UPDATE error_groups g SET trend_count = g.trend_count + d.n
      FROM (SELECT group_id, sum(CASE WHEN bucket >= win THEN count ELSE -count END) AS n
              FROM error_group_hours
             WHERE bucket >= least(old_win, win) AND bucket < greatest(old_win, win)
             GROUP BY group_id) d
     WHERE g.id = d.group_id AND d.n <> 0;
    UPDATE error_group_trend_window SET start = win;
  END IF;
  WITH gone AS (
    DELETE FROM error_group_deltas
     WHERE id IN (SELECT id FROM error_group_deltas ORDER BY id LIMIT max_rows)
    RETURNING *
  ), per_hour AS (
    SELECT group_id, min(event_type) AS event_type, min(error_kind::text)::"ErrorKind" AS error_kind, min(signature) AS signature, bucket,
           sum(total) AS total, sum(unresolved) AS unresolved, sum(failures) AS failures, sum(requeued) AS requeued,
           min(first_seen) AS first_seen, max(last_seen) AS last_seen, min(sample_id) AS sample_id, count(*) AS n
      FROM gone GROUP BY group_id, bucket
  ), q AS (
    SELECT group_id, array_agg(DISTINCT v) AS queues FROM gone, unnest(gone.queues) v GROUP BY group_id
  ), s AS (
    SELECT group_id, array_agg(DISTINCT v) AS sources FROM gone, unnest(gone.sources) v GROUP BY group_id
  )
  -- Each hour row carries its group's queues and sources (unioned again below).
  SELECT array_agg(ROW(p.group_id, p.event_type, p.error_kind, p.signature, p.bucket, p.total, p.unresolved, p.failures, p.requeued,
                       p.first_seen, p.last_seen, q.queues, s.sources, p.sample_id)::lazarus_error_group_fold), coalesce(sum(p.n), 0)
    INTO batch, taken
    FROM per_hour p LEFT JOIN q USING (group_id) LEFT JOIN s USING (group_id);
  IF batch IS NULL THEN
    RETURN;
  END IF;

  -- New groups, with their status from their first events; counted below like the others.
  WITH k AS (
    SELECT group_id, min(event_type) AS event_type, min(error_kind::text)::"ErrorKind" AS error_kind, min(signature) AS signature,
           sum(unresolved) AS unresolved, coalesce(min(first_seen), now()) AS first_seen, coalesce(max(last_seen), now()) AS last_seen,
           min(sample_id) AS sample_id
      FROM unnest(batch) GROUP BY group_id
  ), made AS (
    INSERT INTO error_groups (id, event_type, error_kind, signature, status, first_seen, last_seen, sample_dead_letter_id)
    SELECT group_id, event_type, error_kind, signature,
           CASE WHEN unresolved > 0 THEN 'OPEN' ELSE 'RESOLVED' END::"ErrorGroupStatus", first_seen, last_seen, sample_id
      FROM k ORDER BY group_id
    ON CONFLICT DO NOTHING
    RETURNING id, status
  ), history AS (
    INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
    SELECT id, NULL, status, 'system', 'first seen' FROM made
  )
  SELECT coalesce(array_agg(id), '{}') INTO created FROM made;

  -- Outbound alerts (migration 20261125134500_alerts): a new group with unresolved members.
  PERFORM lazarus_raise_alert('NEW_GROUP', 'group:' || g.id,
            format('New error group: %s %s: %s', g.event_type, g.error_kind, g.signature),
            jsonb_build_object('groupId', g.id::text, 'eventType', g.event_type, 'errorKind', g.error_kind, 'signature', g.signature,
                               'firstSeen', g.first_seen))
     FROM error_groups g WHERE g.id = ANY (created) AND g.status = 'OPEN';

  PERFORM 1 FROM error_groups WHERE id IN (SELECT group_id FROM unnest(batch)) ORDER BY id FOR UPDATE;

  WITH k AS (
    SELECT group_id, sum(total) AS total, sum(unresolved) AS unresolved, sum(failures) AS failures, sum(requeued) AS requeued,
           min(first_seen) AS first_seen, max(last_seen) AS last_seen, coalesce(sum(total) FILTER (WHERE bucket >= win), 0) AS recent
      FROM unnest(batch) GROUP BY group_id
  ), q AS (
    SELECT b.group_id, array_agg(DISTINCT v ORDER BY v) AS queues FROM unnest(batch) b, unnest(b.queues) v GROUP BY 1
  ), s AS (
    SELECT b.group_id, array_agg(DISTINCT v ORDER BY v) AS sources FROM unnest(batch) b, unnest(b.sources) v GROUP BY 1
  ), old AS (
    SELECT g.id, g.status, g.unresolved_count, (g.id = ANY (created)) AS is_new, k.*, q.queues, s.sources
      FROM error_groups g JOIN k ON k.group_id = g.id LEFT JOIN q ON q.group_id = g.id LEFT JOIN s ON s.group_id = g.id
  ), moved AS (
    UPDATE error_groups g
       SET total_count = greatest(0, g.total_count + o.total),
           unresolved_count = greatest(0, g.unresolved_count + o.unresolved),
           trend_count = g.trend_count + o.recent,
           first_seen = least(g.first_seen, coalesce(o.first_seen, g.first_seen)),
           last_seen = greatest(g.last_seen, coalesce(o.last_seen, g.last_seen)),
           queues = CASE WHEN o.queues IS NULL OR o.queues <@ g.queues THEN g.queues ELSE lazarus_array_union(g.queues, o.queues) END,
           sources = CASE WHEN o.sources IS NULL OR o.sources <@ g.sources THEN g.sources ELSE lazarus_array_union(g.sources, o.sources) END,
           status = CASE
             WHEN o.is_new THEN g.status
             WHEN g.status = 'RESOLVED' AND (o.failures > 0 OR o.requeued > 0) AND g.unresolved_count + o.unresolved > 0 THEN 'OPEN'
             WHEN g.status IN ('OPEN', 'ACKNOWLEDGED') AND g.unresolved_count + o.unresolved <= 0 THEN 'RESOLVED'
             ELSE g.status END::"ErrorGroupStatus",
           regressed_at = CASE
             WHEN NOT o.is_new AND g.status = 'RESOLVED' AND o.failures > 0 AND g.unresolved_count + o.unresolved > 0 THEN now()
             ELSE g.regressed_at END,
           updated_at = now()
      FROM old o
     WHERE g.id = o.id
    RETURNING g.id, o.status AS from_status, g.status AS to_status, o.failures
  ), hours AS (
    INSERT INTO error_group_hours AS h (group_id, bucket, count)
    SELECT group_id, bucket, sum(total) FROM unnest(batch) GROUP BY 1, 2 HAVING sum(total) <> 0 ORDER BY 1, 2
    ON CONFLICT (group_id, bucket) DO UPDATE SET count = h.count + excluded.count
  ), history AS (
    INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
    SELECT id, from_status, to_status, 'system',
           CASE WHEN to_status = 'RESOLVED' THEN 'no unresolved members'
                WHEN failures > 0 THEN 'regressed: a new failure'
                ELSE 'a member is unresolved again' END
      FROM moved WHERE from_status <> to_status
  )
  SELECT count(*), coalesce(array_agg(id) FILTER (WHERE from_status = 'RESOLVED' AND to_status = 'OPEN' AND failures > 0), '{}')
    INTO changed, regressed FROM moved;

  -- A RESOLVED group with a new failure regressed (IGNORED groups never move, so never alert).
  PERFORM lazarus_raise_alert('REGRESSION', 'group:' || g.id,
            format('Error group regressed: %s %s: %s', g.event_type, g.error_kind, g.signature),
            jsonb_build_object('groupId', g.id::text, 'eventType', g.event_type, 'errorKind', g.error_kind, 'signature', g.signature,
                               'regressedAt', g.regressed_at, 'unresolved', g.unresolved_count))
     FROM error_groups g WHERE g.id = ANY (regressed);
END $$;

--
-- Name: lazarus_group_signature(text, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_group_signature(fingerprint text, error_signature text, error_stack text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT coalesce(fingerprint, error_signature || coalesce(E'\n' || lazarus_stack_frames(error_stack), ''))
$$;

--
-- Name: lazarus_hint_turn(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_hint_turn() RETURNS boolean
    LANGUAGE plpgsql
    AS $$
BEGIN
  -- 'each': every transaction hints, as before this migration (a session, role or database setting).
  IF lower(btrim(coalesce(current_setting('lazarus.change_hints', true), ''))) = 'each' THEN
    RETURN true;
  END IF;
  -- 1281450066 is 'LAZR' as an int4; 1: the change hint.
  RETURN pg_try_advisory_xact_lock(1281450066, 1);
END $$;

--
-- Name: lazarus_is_unresolved(public."DeadLetterStatus"); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_is_unresolved(status public."DeadLetterStatus") RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT (status IN ('PENDING', 'PROCESSING', 'EXHAUSTED'))::int $$;

--
-- Name: lazarus_latency_bucket(integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_latency_bucket(duration_ms integer) RETURNS smallint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT width_bucket(duration_ms, '{1,2,3,4,5,6,7,8,10,11,13,16,19,23,27,32,38,45,54,64,76,91,108,128,152,181,215,256,304,362,431,512,609,724,861,1024,1218,1448,1722,2048,2435,2896,3444,4096,4871,5793,6889,8192,9742,11585,13777,16384,19484,23170,27554,32768,38968,46341,55109,65536,77936,92682,110218,131072,155872,185364,220436,262144,311744,370728,440872,524288,623487,741455,881744,1048576}'::int[])::smallint $$;

--
-- Name: lazarus_notify_queue_threshold(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_notify_queue_threshold() RETURNS double precision
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE WHEN lower(btrim(current_setting('lazarus.change_hints', true))) = 'off' THEN -1
              ELSE least(0.5, coalesce(lazarus_setting_fraction('lazarus.notify_queue_threshold'), 0.5)) END;
$$;

--
-- Name: lazarus_notify_queue_usage(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_notify_queue_usage() RETURNS double precision
    LANGUAGE sql STABLE
    AS $$
  SELECT greatest(pg_notification_queue_usage(), coalesce(lazarus_setting_fraction('lazarus.notify_queue_usage_override'), 0));
$$;

--
-- Name: lazarus_raise_alert(public."AlertTrigger", text, text, jsonb, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_raise_alert(p_trigger public."AlertTrigger", p_subject text, p_summary text, p_details jsonb DEFAULT '{}'::jsonb, p_only_rule bigint DEFAULT NULL::bigint) RETURNS SETOF bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
  r RECORD;
  w RECORD;
  v_alert BIGINT;
  v_digest BIGINT;
  v_digest_details JSONB;
  v_summary TEXT := left(coalesce(nullif(p_summary, ''), p_trigger::text), 2000);
  v_details JSONB := CASE WHEN jsonb_typeof(p_details) = 'object' THEN p_details
                          WHEN p_details IS NULL THEN '{}'::jsonb
                          ELSE jsonb_build_object('value', p_details) END;
  v_first JSONB := jsonb_build_array(jsonb_build_object('subject', p_subject, 'summary', left(v_summary, 200)));
  any_raised BOOLEAN := false;
BEGIN
  FOR r IN SELECT id, name, window_seconds, max_alerts_per_window, cap_window_seconds FROM alert_rules
            WHERE "trigger" = p_trigger AND enabled AND (p_only_rule IS NULL OR id = p_only_rule)
            ORDER BY id LOOP
    PERFORM 1 FROM alert_throttles t
      WHERE t.rule_id = r.id AND t.subject = p_subject
        AND t.last_raised_at > now() - make_interval(secs => r.window_seconds);
    CONTINUE WHEN FOUND;
    INSERT INTO alert_throttles AS t (rule_id, subject, last_raised_at) VALUES (r.id, p_subject, now())
      ON CONFLICT (rule_id, subject) DO UPDATE SET last_raised_at = excluded.last_raised_at
      WHERE t.last_raised_at <= excluded.last_raised_at - make_interval(secs => r.window_seconds);
    CONTINUE WHEN NOT FOUND;

    INSERT INTO alert_rule_windows AS v (rule_id, started_at, raised) VALUES (r.id, now(), 1)
      ON CONFLICT (rule_id) DO UPDATE SET
        started_at = CASE WHEN v.started_at <= now() - make_interval(secs => r.cap_window_seconds) THEN now() ELSE v.started_at END,
        raised = CASE WHEN v.started_at <= now() - make_interval(secs => r.cap_window_seconds) THEN 1 ELSE v.raised + 1 END,
        digest_id = CASE WHEN v.started_at <= now() - make_interval(secs => r.cap_window_seconds) THEN NULL ELSE v.digest_id END
      RETURNING v.started_at, v.raised, v.digest_id INTO w;

    IF w.raised <= r.max_alerts_per_window THEN
      INSERT INTO alerts (rule_id, rule_name, "trigger", subject, summary, details)
        VALUES (r.id, r.name, p_trigger, p_subject, v_summary, v_details)
        RETURNING id INTO v_alert;
      any_raised := true;
    ELSE
      v_digest := NULL;
      SELECT jsonb_set(jsonb_set(a.details, '{suppressed}', to_jsonb((a.details->>'suppressed')::int + 1)), '{first}',
                       CASE WHEN jsonb_array_length(a.details->'first') < 5 THEN (a.details->'first') || v_first
                            ELSE a.details->'first' END)
        INTO v_digest_details
        FROM alerts a WHERE a.id = w.digest_id AND a.delivery_status = 'PENDING' AND a.attempts = 0;
      IF FOUND THEN
        UPDATE alerts
           SET details = v_digest_details,
               summary = lazarus_alert_digest_summary(r.name, p_trigger, r.max_alerts_per_window, r.cap_window_seconds, v_digest_details)
         WHERE id = w.digest_id AND delivery_status = 'PENDING' AND attempts = 0
        RETURNING id INTO v_digest;
      END IF;
      IF v_digest IS NULL THEN
        v_digest_details := jsonb_build_object('digest', true, 'suppressed', 1, 'first', v_first,
                                               'maxAlertsPerWindow', r.max_alerts_per_window, 'capWindowSeconds', r.cap_window_seconds,
                                               'windowStartedAt', w.started_at,
                                               'windowEndsAt', w.started_at + make_interval(secs => r.cap_window_seconds));
        INSERT INTO alerts (rule_id, rule_name, "trigger", subject, summary, details, next_attempt_at)
          VALUES (r.id, r.name, p_trigger, 'digest',
                  lazarus_alert_digest_summary(r.name, p_trigger, r.max_alerts_per_window, r.cap_window_seconds, v_digest_details),
                  v_digest_details, greatest(now(), w.started_at + make_interval(secs => r.cap_window_seconds)))
          RETURNING id INTO v_digest;
        UPDATE alert_rule_windows SET digest_id = v_digest WHERE rule_id = r.id;
        any_raised := true;
      END IF;
      INSERT INTO alerts (rule_id, rule_name, "trigger", subject, summary, details, delivery_status, digest_id)
        VALUES (r.id, r.name, p_trigger, p_subject, v_summary, v_details, 'SUPPRESSED', v_digest)
        RETURNING id INTO v_alert;
    END IF;
    RETURN NEXT v_alert;
  END LOOP;
  IF any_raised AND pg_notification_queue_usage() <= 0.5 THEN
    PERFORM pg_notify('lazarus_alerts', '');
  END IF;
END;
$$;

--
-- Name: lazarus_rollup_bucket(timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_rollup_bucket(created_at timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' $$;

--
-- Name: lazarus_setting_fraction(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_setting_fraction(name text) RETURNS double precision
    LANGUAGE plpgsql STABLE
    AS $_$
DECLARE
  raw TEXT := current_setting(name, true);
BEGIN
  IF raw IS NULL OR raw !~ '^\s*(0|1)?(\.[0-9]{1,15})?\s*$' OR btrim(raw) IN ('', '.') THEN
    RETURN NULL;
  END IF;
  RETURN least(1.0, btrim(raw)::double precision);
END;
$_$;

--
-- Name: lazarus_stack_frames(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_stack_frames(stack text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $_$
DECLARE
  is_python boolean := strpos(stack, 'File "') > 0 AND strpos(stack, '", line ') > 0;
  line text;
  prev text := '';
  t text;
  fn text;
  loc text;
  frame text;
  frames text[] := '{}';
BEGIN
  FOREACH line IN ARRAY string_to_array(CASE WHEN is_python THEN right(stack, 2048) ELSE left(stack, 2048) END, E'\n') LOOP
    t := ltrim(rtrim(line, E' \t\r'), E' \t');
    frame := NULL;
    loc := NULL;
    IF is_python THEN
      IF t LIKE 'File "%", line %, in %' THEN
        fn := substr(t, strpos(t, ', in ') + 5);
        loc := split_part(t, '"', 2);
      ELSIF t LIKE 'Traceback (most recent call last):%' THEN
        frames := '{}';
      END IF;
    ELSIF t LIKE 'at %' THEN
      -- Node/JS, JVM, .NET: without "at", "async" and a logback jar suffix "~[app.jar:1.2]".
      t := CASE WHEN t LIKE 'at async %' THEN substr(t, 10) ELSE substr(t, 4) END;
      IF strpos(t, '[') > 0 THEN
        t := regexp_replace(t, '\s+~?\[[^\]]*\]$', '');
      END IF;
      IF right(t, 1) = ')' AND strpos(t, ' (') > 0 THEN                  -- Node: fn (location)
        fn := left(t, strpos(t, ' (') - 1);
        loc := substr(t, strpos(t, ' (') + 2, length(t) - strpos(t, ' (') - 2);
      ELSIF strpos(t, ' in ') > 0 AND t LIKE '%:line %' THEN               -- .NET with a file
        fn := left(t, strpos(t, ' in ') - 1);
        loc := substring(t FROM ' in (.+):line \d+$');
      ELSIF strpos(t, '(') = 0 THEN                                        -- Node: anonymous
        fn := NULL;
        loc := t;
      ELSIF t ~ '^[^\s(]+\([^()]*\)$' THEN                                 -- JVM; .NET without a file
        frame := regexp_replace(t, ':\d+\)$', ')');
      END IF;
      IF loc IS NOT NULL AND strpos(t, ':line ') = 0 THEN                -- Node: drop :line:col
        t := loc;
        loc := regexp_replace(loc, '(:\d+){1,2}$', '');
        IF loc = t AND NOT (loc IN ('native', '<anonymous>') OR loc LIKE 'index %') THEN
          loc := NULL;                                                      -- no location: a message line
        END IF;
      END IF;
    ELSIF left(line, 1) = E'\t' AND strpos(line, '.go:') > 0 THEN
      IF t ~ '^.+\.go:\d+( \+0x[0-9a-f]+)?$' AND prev NOT LIKE 'panic(%' AND prev NOT LIKE 'runtime.%' THEN
        fn := regexp_replace(prev, '\([^()]*\)$| in goroutine \d+$', '');
        loc := substring(t FROM '^(.+\.go):\d+');
      END IF;
    ELSIF strpos(t, ':in ') > 0 THEN
      fn := substring(t FROM '^(?:from\s+)?[^:\s][^:]*:\d+:in [`'']([^`'']+)''');
      loc := CASE WHEN fn IS NOT NULL THEN substring(t FROM '^(?:from\s+)?([^:\s][^:]*):\d+:in ') END;
    ELSIF strpos(t, '@') > 0 THEN
      loc := substring(t FROM '^[^@\s]*@(.+):\d+:\d+$');
      fn := nullif(split_part(t, '@', 1), '');
    END IF;
    prev := t;
    IF loc IS NOT NULL THEN
      -- A path keeps its last two segments, without query, fragment or "@1.2.3" version.
      IF loc NOT LIKE 'node:%' AND (strpos(loc, '/') > 0 OR strpos(loc, '\') > 0) THEN
        loc := split_part(split_part(translate(loc, '\', '/'), '?', 1), '#', 1);
        IF strpos(loc, '@') > 0 THEN
          loc := regexp_replace(loc, '@v?[0-9][^/]*', '', 'g');
        END IF;
        loc := reverse(split_part(reverse(loc), '/', 2)) || '/' || reverse(split_part(reverse(loc), '/', 1));
      END IF;
      frame := concat_ws(' ', fn, '(' || loc || ')');
    END IF;
    IF frame IS NOT NULL THEN
      IF translate(frame, '0123456789', '') <> frame THEN
        frame := regexp_replace(regexp_replace(regexp_replace(frame,
                   '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\m0x[0-9a-f]+\M|\m(?=[0-9a-f]{6,}\M)(?=[0-9a-f]*[a-f])[0-9a-f]*[0-9][0-9a-f]*\M', '<hex>', 'gi'),
                   '\m\d+\M', '<n>', 'g'),
                   '(Generated\w*Accessor|\$Proxy)\d+', '\1<id>', 'g');
      END IF;
      IF strpos(frame, '$') > 0 OR octet_length(frame) <> length(frame) THEN
        frame := regexp_replace(regexp_replace(frame, '(\$(?:HibernateProxy|ByteBuddy|MockitoMock)\$)\w+', '\1<id>', 'g'), '[^ -~]', '?', 'g');
      END IF;
      frames := frames || left(frame, 120);
      EXIT WHEN NOT is_python AND cardinality(frames) = 5;
    END IF;
  END LOOP;
  IF cardinality(frames) = 0 THEN
    RETURN NULL;
  ELSIF is_python THEN
    frames := ARRAY(SELECT f FROM unnest(frames) WITH ORDINALITY AS x(f, n) ORDER BY n DESC LIMIT 5);
  END IF;
  RETURN 'at ' || array_to_string(frames, E'\nat ');
END $_$;

--
-- Name: lazarus_change_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.lazarus_change_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: dead_letter_states; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_letter_states (
    id bigint NOT NULL,
    event_type text NOT NULL,
    ordering_key text,
    ordering_seq bigint,
    status public."DeadLetterStatus" DEFAULT 'PENDING'::public."DeadLetterStatus" NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP,
    lease_owner text,
    lease_token uuid,
    lease_expires_at timestamp(6) with time zone,
    resolved_at timestamp(6) with time zone,
    resolved_by text,
    resolution_reason text,
    updated_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    version integer DEFAULT 0 NOT NULL,
    delivery_generation integer DEFAULT 0 NOT NULL,
    change_id bigint DEFAULT nextval('public.lazarus_change_seq'::regclass) NOT NULL,
    change_xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    created_at timestamp(6) with time zone NOT NULL,
    deliver_to_source boolean,
    CONSTRAINT dead_letter_states_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT dead_letter_states_lease_check CHECK ((((status = 'PROCESSING'::public."DeadLetterStatus") = ((lease_owner IS NOT NULL) AND (lease_token IS NOT NULL) AND (lease_expires_at IS NOT NULL))) AND ((status = 'PROCESSING'::public."DeadLetterStatus") OR ((lease_owner IS NULL) AND (lease_token IS NULL) AND (lease_expires_at IS NULL))))),
    CONSTRAINT dead_letter_states_pending_due_check CHECK (((status <> 'PENDING'::public."DeadLetterStatus") OR (next_attempt_at IS NOT NULL)))
)
WITH (fillfactor='70');

--
-- Name: TABLE dead_letter_states; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON TABLE public.dead_letter_states IS 'The current queue state of each event in dead_letters (same id), written by the retry engine and operator actions.';

--
-- Name: COLUMN dead_letter_states.deliver_to_source; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letter_states.deliver_to_source IS 'True while the event waits to be redriven to its origin (requeue with destination SOURCE); NULL otherwise. Cleared when it finishes.';

--
-- Name: lazarus_state_unstamped(public.dead_letter_states, public.dead_letter_states); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.lazarus_state_unstamped(n public.dead_letter_states, o public.dead_letter_states) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
  SELECT n.change_xid IS DISTINCT FROM pg_current_xact_id()
      OR n.updated_at IS DISTINCT FROM now()
      OR (n.status IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED')) <> (n.resolved_at IS NOT NULL)
      OR (n.status NOT IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED') AND (n.resolved_by IS NOT NULL OR n.resolution_reason IS NOT NULL))
      OR (o.status = 'SUCCEEDED' AND n.status = 'PENDING' AND n.delivery_generation = o.delivery_generation)
$$;

--
-- Name: tg_dead_letter_states__clear_source(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letter_states__clear_source() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  NEW.deliver_to_source := NULL;
  RETURN NEW;
END $$;

--
-- Name: tg_dead_letter_states__stamp(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letter_states__stamp() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF OLD.change_xid = pg_current_xact_id() THEN
      NEW.change_id := OLD.change_id;
      NEW.change_xid := OLD.change_xid;
      NEW.version := OLD.version;
    ELSE
      NEW.change_id := nextval('lazarus_change_seq');
      NEW.change_xid := pg_current_xact_id();
      NEW.version := OLD.version + 1;
    END IF;
    NEW.updated_at := now();
    IF OLD.status = 'SUCCEEDED' AND NEW.status = 'PENDING' THEN
      NEW.delivery_generation := OLD.delivery_generation + 1;
    END IF;
  ELSE
    NEW.change_id := nextval('lazarus_change_seq');
    NEW.change_xid := pg_current_xact_id();
  END IF;
  IF NEW.status IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED') THEN
    IF NEW.resolved_at IS NULL THEN
      NEW.resolved_at := now();
    END IF;
  ELSE
    NEW.resolved_at := NULL;
    NEW.resolved_by := NULL;
    NEW.resolution_reason := NULL;
  END IF;
  RETURN NEW;
END $$;

--
-- Name: tg_dead_letter_states__transitions(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letter_states__transitions() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  WITH moved AS (
    SELECT n.id, o.status AS old_status, n.status, o.attempts AS old_attempts, n.attempts
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.status <> o.status OR n.attempts <> o.attempts),
  dims AS (
    SELECT m.*, lazarus_rollup_bucket(d.created_at) AS bucket, d.event_type, d.queue, d.error_kind, d.error_group_id
      FROM moved m JOIN dead_letters d ON d.id = m.id),
  rollups AS (
    INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
    SELECT bucket, event_type, queue, error_kind, status, sum(n), sum(a)
      FROM (SELECT bucket, event_type, queue, error_kind, status, 1 AS n, attempts::bigint AS a FROM dims
            UNION ALL
            SELECT bucket, event_type, queue, error_kind, old_status, -1, -old_attempts::bigint FROM dims) c
     GROUP BY 1, 2, 3, 4, 5
    HAVING sum(n) <> 0 OR sum(a) <> 0),
  -- A group's rows share its key (type, kind, signature), so one row gives the signature.
  by_group AS (
    SELECT error_group_id, event_type, error_kind, bucket, sum(u) AS u, min(id) AS one_id
      FROM (SELECT id, error_group_id, event_type, error_kind, bucket,
                   lazarus_is_unresolved(status) - lazarus_is_unresolved(old_status) AS u
              FROM dims WHERE error_group_id IS NOT NULL) x
     GROUP BY 1, 2, 3, 4
    HAVING sum(u) <> 0)
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued)
  SELECT g.error_group_id, g.event_type, g.error_kind, lazarus_delta_signature(d.fingerprint, d.error_signature, d.error_stack),
         g.bucket, 0, g.u, 0, greatest(0, g.u)
    FROM by_group g JOIN dead_letters d ON d.id = g.one_id;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letter_states__update(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letter_states__update() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  hint jsonb;
BEGIN
  -- Checked first: an UPDATE fires this trigger even when it changes no row, so the update below,
  -- run unconditionally, would fire it again without end. (A count, not EXISTS: for EXISTS the
  -- planner joins the two transition tables in a nested loop, quadratic in the rows updated.)
  IF (SELECT count(*) FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE lazarus_state_unstamped(n, o)) > 0 THEN
    -- The stamp as tg_dead_letter_states__stamp gave it: version and cursor kept if this
    -- transaction had written the row before (its old version carries this transaction's xid), a
    -- step on otherwise, unless the statement took that step itself.
    UPDATE dead_letter_states s
       SET change_id = CASE WHEN o.change_xid = pg_current_xact_id() THEN o.change_id
                            WHEN n.change_xid = pg_current_xact_id() THEN n.change_id ELSE nextval('lazarus_change_seq') END,
           version = CASE WHEN o.change_xid = pg_current_xact_id() THEN o.version
                          WHEN n.change_xid = pg_current_xact_id() THEN n.version ELSE o.version + 1 END,
           change_xid = pg_current_xact_id(),
           updated_at = now(),
           delivery_generation = CASE WHEN o.status = 'SUCCEEDED' AND n.status = 'PENDING' THEN o.delivery_generation + 1
                                      ELSE n.delivery_generation END,
           resolved_at = CASE WHEN n.status IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED') THEN coalesce(n.resolved_at, now()) END,
           resolved_by = CASE WHEN n.status IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED') THEN n.resolved_by END,
           resolution_reason = CASE WHEN n.status IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED') THEN n.resolution_reason END
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE s.id = n.id AND lazarus_state_unstamped(n, o);
  END IF;
  -- The NOTIFY hint (tg_lazarus__notify's) for the rows that carry this transaction's stamp. The
  -- update above gave the others a new change id and hinted them itself: hinting them here too
  -- would name change ids that no longer exist.
  IF lazarus_notify_queue_usage() <= lazarus_notify_queue_threshold() THEN
    SELECT jsonb_build_object(
             't', 'dead_letters', 'op', 'update', 'n', count(*), 'max', max(change_id),
             'ids', (SELECT coalesce(jsonb_agg(id), '[]'::jsonb)
                       FROM (SELECT id FROM new_rows WHERE change_xid = pg_current_xact_id() LIMIT 50) firsts))
      INTO hint
      FROM new_rows
     WHERE change_xid = pg_current_xact_id()
    HAVING count(*) > 0;
    IF hint IS NOT NULL AND lazarus_hint_turn() THEN
      PERFORM pg_notify('lazarus_changes', hint::text);
    END IF;
  END IF;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__delete(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__delete() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  WITH s AS (
    DELETE FROM dead_letter_states s USING gone g WHERE s.id = g.id
    RETURNING s.id, s.status, s.attempts, s.updated_at, s.next_attempt_at),
  attempts AS (
    DELETE FROM delivery_attempts a USING gone g WHERE a.dead_letter_id = g.id),
  c AS (
    SELECT g.id, g.event_type, g.queue, g.source, g.ordering_key, g.error_kind, g.error_signature, g.fingerprint,
           g.error_stack, g.error_group_id, g.created_at, s.status, s.attempts, s.updated_at, s.next_attempt_at
      FROM gone g JOIN s ON s.id = g.id),
  rollups AS (
    INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
    SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, -count(*), -sum(attempts)
      FROM c GROUP BY 1, 2, 3, 4, 5),
  signatures AS (
    INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
    SELECT lazarus_rollup_bucket(created_at), error_signature, event_type, queue, error_kind, -count(*)
      FROM gone GROUP BY 1, 2, 3, 4, 5),
  groups AS (
    INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued)
    SELECT error_group_id, event_type, error_kind,
           lazarus_delta_signature(min(fingerprint), min(error_signature), max(error_stack COLLATE "C")), lazarus_rollup_bucket(created_at),
           0, -count(*), 0, 0
      FROM c WHERE status IN ('PENDING', 'PROCESSING', 'EXHAUSTED') AND error_group_id IS NOT NULL
     GROUP BY error_group_id, event_type, error_kind, lazarus_rollup_bucket(created_at))
  INSERT INTO dead_letter_tombstones (id, event_type, queue, source, ordering_key, error_kind, status,
                                      error_signature, fingerprint, error_group_id, attempts, created_at, updated_at, next_attempt_at)
  SELECT id, event_type, queue, source, ordering_key, error_kind, status,
         error_signature, fingerprint, error_group_id, attempts, created_at, updated_at, next_attempt_at
    FROM c;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__derive_signature(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__derive_signature() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  NEW.error_signature := lazarus_error_signature(NEW.error_message);
  RETURN NEW;
END $$;

--
-- Name: tg_dead_letters__error_group_id(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__error_group_id() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  NEW.error_group_id := lazarus_error_group_id(NEW.event_type, NEW.error_kind,
                          lazarus_group_signature(NEW.fingerprint, NEW.error_signature, NEW.error_stack));
  RETURN NEW;
END $$;

--
-- Name: tg_dead_letters__error_groups_insert(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__error_groups_insert() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued,
                                  first_seen, last_seen, queues, sources, sample_id)
  SELECT error_group_id, event_type, error_kind,
         lazarus_group_signature(min(fingerprint), min(error_signature), max(error_stack COLLATE "C")), lazarus_rollup_bucket(created_at),
         count(*), sum(lazarus_is_unresolved(coalesce(status, 'PENDING'))), sum(lazarus_is_unresolved(coalesce(status, 'PENDING'))), 0,
         min(created_at), max(created_at), array_agg(DISTINCT queue), array_agg(DISTINCT source), min(id)
    FROM added GROUP BY error_group_id, event_type, error_kind, lazarus_rollup_bucket(created_at);
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__error_groups_truncate(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__error_groups_truncate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  TRUNCATE error_group_deltas, error_group_hours, error_group_actions, error_groups;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__error_texts_delete(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__error_texts_delete() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  DELETE FROM dead_letter_error_texts t USING old_rows o WHERE t.dead_letter_id = o.id;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__error_texts_insert(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__error_texts_insert() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO dead_letter_error_texts (dead_letter_id, error_message, error_stack)
  SELECT id, error_message, error_stack FROM new_rows;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__error_texts_truncate(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__error_texts_truncate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  TRUNCATE dead_letter_error_texts;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__error_texts_update(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__error_texts_update() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  UPDATE dead_letter_error_texts SET error_message = NEW.error_message, error_stack = NEW.error_stack
   WHERE dead_letter_id = NEW.id;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__inputs_fixed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__inputs_fixed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  RAISE EXCEPTION 'dead_letters holds no queue state: change status, attempts, the lease or the resolution in dead_letters_current (or dead_letter_states)'
    USING ERRCODE = 'LZ422';
END $$;

--
-- Name: tg_dead_letters__origin_fixed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__origin_fixed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  RAISE EXCEPTION 'dead_letters.origin is written once, with the event: record a new event to change where it came from'
    USING ERRCODE = 'LZ422';
END $$;

--
-- Name: tg_dead_letters__recorded(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__recorded() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO dead_letter_actions (dead_letter_id, action, actor, created_at)
  SELECT n.id, 'RECORDED', 'sql:' || session_user, n.created_at
    FROM added n
   WHERE NOT EXISTS (SELECT 1 FROM dead_letter_actions a WHERE a.dead_letter_id = n.id AND a.action = 'RECORDED');
  RETURN NULL;
END;
$$;

--
-- Name: tg_dead_letters__rollup_insert(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__rollup_insert() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
  SELECT lazarus_rollup_bucket(created_at), event_type, queue, error_kind, coalesce(status, 'PENDING'), count(*),
         coalesce(sum(attempts), 0)
    FROM new_rows GROUP BY 1, 2, 3, 4, 5;
  INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
  SELECT lazarus_rollup_bucket(created_at), error_signature, event_type, queue, error_kind, count(*)
    FROM new_rows GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__rollup_truncate(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__rollup_truncate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  TRUNCATE dead_letter_rollups, dead_letter_signature_rollups;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__signature_rollup_update(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__signature_rollup_update() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
  VALUES (lazarus_rollup_bucket(OLD.created_at), OLD.error_signature, OLD.event_type, OLD.queue, OLD.error_kind, -1),
         (lazarus_rollup_bucket(NEW.created_at), NEW.error_signature, NEW.event_type, NEW.queue, NEW.error_kind, 1);
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__state_insert(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__state_insert() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  given BIGINT[];
BEGIN
  INSERT INTO dead_letter_states (id, event_type, ordering_key, ordering_seq, created_at, status, attempts, next_attempt_at,
                                  lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason)
  SELECT id, event_type, ordering_key, ordering_seq, created_at, coalesce(status, 'PENDING'), coalesce(attempts, 0),
         coalesce(next_attempt_at, now()), lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason
    FROM added
  ON CONFLICT (id) DO NOTHING;
  given := ARRAY(SELECT id FROM added
                  WHERE status IS NOT NULL OR attempts IS NOT NULL OR next_attempt_at IS NOT NULL
                     OR lease_owner IS NOT NULL OR lease_token IS NOT NULL OR lease_expires_at IS NOT NULL
                     OR resolved_at IS NOT NULL OR resolved_by IS NOT NULL OR resolution_reason IS NOT NULL);
  IF cardinality(given) > 0 THEN
    UPDATE dead_letters
       SET status = NULL, attempts = NULL, next_attempt_at = NULL, lease_owner = NULL, lease_token = NULL,
           lease_expires_at = NULL, resolved_at = NULL, resolved_by = NULL, resolution_reason = NULL
     WHERE id = ANY (given);
  END IF;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__state_truncate(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__state_truncate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  BEGIN
    TRUNCATE dead_letter_states;
  EXCEPTION WHEN object_in_use THEN
    DELETE FROM dead_letter_states;
  END;
  BEGIN
    TRUNCATE delivery_attempts;
  EXCEPTION WHEN object_in_use THEN
    DELETE FROM delivery_attempts;
  END;
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters__update(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters__update() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  WITH c AS (
    SELECT s.status, s.attempts, 1 AS n, lazarus_rollup_bucket(d.created_at) AS bucket, d.created_at, d.event_type, d.queue,
           d.error_kind, d.error_group_id,
           lazarus_delta_signature(d.fingerprint, d.error_signature, d.error_stack) AS signature
      FROM new_rows d JOIN dead_letter_states s ON s.id = d.id
    UNION ALL
    SELECT s.status, s.attempts, -1, lazarus_rollup_bucket(d.created_at), d.created_at, d.event_type, d.queue,
           d.error_kind, d.error_group_id, lazarus_delta_signature(d.fingerprint, d.error_signature, d.error_stack)
      FROM old_rows d JOIN dead_letter_states s ON s.id = d.id),
  rollups AS (
    INSERT INTO dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
    SELECT bucket, event_type, queue, error_kind, status, sum(n), sum(n * attempts)
      FROM c GROUP BY 1, 2, 3, 4, 5
    HAVING sum(n) <> 0 OR sum(n * attempts) <> 0)
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued,
                                  first_seen, last_seen)
  SELECT error_group_id, event_type, error_kind, signature, bucket, sum(n), sum(n * lazarus_is_unresolved(status)), 0,
         greatest(0, sum(n * lazarus_is_unresolved(status))),
         CASE WHEN sum(n) > 0 THEN min(created_at) END, CASE WHEN sum(n) > 0 THEN max(created_at) END
    FROM c WHERE error_group_id IS NOT NULL
   GROUP BY error_group_id, event_type, error_kind, signature, bucket
  HAVING sum(n) <> 0 OR sum(n * lazarus_is_unresolved(status)) <> 0;
  UPDATE dead_letter_states s
     SET event_type = n.event_type, ordering_key = n.ordering_key, ordering_seq = n.ordering_seq, created_at = n.created_at,
         change_id = CASE WHEN s.change_xid = pg_current_xact_id() THEN s.change_id ELSE nextval('lazarus_change_seq') END,
         change_xid = pg_current_xact_id(),
         version = CASE WHEN s.change_xid = pg_current_xact_id() THEN s.version ELSE s.version + 1 END,
         updated_at = now()
    FROM new_rows n
   WHERE s.id = n.id
     AND (s.change_xid IS DISTINCT FROM pg_current_xact_id()
          OR (s.event_type, s.ordering_key, s.ordering_seq, s.created_at)
             IS DISTINCT FROM (n.event_type, n.ordering_key, n.ordering_seq, n.created_at));
  RETURN NULL;
END $$;

--
-- Name: tg_dead_letters_current__write(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_dead_letters_current__write() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    DELETE FROM dead_letters WHERE id = OLD.id;
    RETURN OLD;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO dead_letter_states (id, event_type, ordering_key, ordering_seq, created_at, status, attempts, next_attempt_at,
                                    lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason,
                                    updated_at, delivery_generation)
    VALUES (NEW.id, NEW.event_type, NEW.ordering_key, NEW.ordering_seq, NEW.created_at, NEW.status, NEW.attempts, NEW.next_attempt_at,
            NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at, NEW.resolved_at, NEW.resolved_by, NEW.resolution_reason,
            coalesce(NEW.updated_at, now()), NEW.delivery_generation);
    INSERT INTO dead_letters (id, event_type, queue, source, ordering_key, ordering_seq, dedupe_key, payload, headers,
                              error_kind, error_message, error_stack, status, attempts, max_attempts, next_attempt_at,
                              lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason,
                              occurred_at, created_at, fingerprint, origin)
    VALUES (NEW.id, NEW.event_type, NEW.queue, NEW.source, NEW.ordering_key, NEW.ordering_seq, NEW.dedupe_key, NEW.payload, NEW.headers,
            NEW.error_kind, NEW.error_message, NEW.error_stack, NEW.status, NEW.attempts, NEW.max_attempts, NEW.next_attempt_at,
            NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at, NEW.resolved_at, NEW.resolved_by, NEW.resolution_reason,
            NEW.occurred_at, NEW.created_at, NEW.fingerprint, NEW.origin);
  ELSE
    IF (NEW.event_type, NEW.queue, NEW.source, NEW.ordering_key, NEW.ordering_seq, NEW.dedupe_key, NEW.payload, NEW.headers,
        NEW.error_kind, NEW.error_message, NEW.error_stack, NEW.max_attempts, NEW.occurred_at, NEW.created_at, NEW.fingerprint,
        NEW.origin)
       IS DISTINCT FROM
       (OLD.event_type, OLD.queue, OLD.source, OLD.ordering_key, OLD.ordering_seq, OLD.dedupe_key, OLD.payload, OLD.headers,
        OLD.error_kind, OLD.error_message, OLD.error_stack, OLD.max_attempts, OLD.occurred_at, OLD.created_at, OLD.fingerprint,
        OLD.origin) THEN
      UPDATE dead_letters
         SET event_type = NEW.event_type, queue = NEW.queue, source = NEW.source, ordering_key = NEW.ordering_key,
             ordering_seq = NEW.ordering_seq, dedupe_key = NEW.dedupe_key, payload = NEW.payload, headers = NEW.headers,
             error_kind = NEW.error_kind, error_message = NEW.error_message, error_stack = NEW.error_stack,
             max_attempts = NEW.max_attempts, occurred_at = NEW.occurred_at, created_at = NEW.created_at,
             fingerprint = NEW.fingerprint, origin = NEW.origin
       WHERE id = OLD.id;
    END IF;
    IF (NEW.status, NEW.attempts, NEW.next_attempt_at, NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at,
        NEW.resolved_at, NEW.resolved_by, NEW.resolution_reason, NEW.delivery_generation)
       IS DISTINCT FROM
       (OLD.status, OLD.attempts, OLD.next_attempt_at, OLD.lease_owner, OLD.lease_token, OLD.lease_expires_at,
        OLD.resolved_at, OLD.resolved_by, OLD.resolution_reason, OLD.delivery_generation) THEN
      UPDATE dead_letter_states
         SET status = NEW.status, attempts = NEW.attempts, next_attempt_at = NEW.next_attempt_at,
             lease_owner = NEW.lease_owner, lease_token = NEW.lease_token, lease_expires_at = NEW.lease_expires_at,
             resolved_at = NEW.resolved_at, resolved_by = NEW.resolved_by, resolution_reason = NEW.resolution_reason,
             delivery_generation = NEW.delivery_generation
       WHERE id = OLD.id;
    END IF;
  END IF;
  SELECT * INTO NEW FROM dead_letters_current WHERE id = NEW.id;
  RETURN NEW;
END $$;

--
-- Name: tg_delivery_attempts__rollup_insert(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_delivery_attempts__rollup_insert() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO delivery_attempt_rollups (bucket, event_type, target, outcome, latency_bucket, count)
  SELECT lazarus_attempt_minute(a.started_at), d.event_type, coalesce(a.target, ''), a.outcome, lazarus_latency_bucket(a.duration_ms), count(*)
    FROM new_rows a JOIN dead_letters d ON d.id = a.dead_letter_id
   GROUP BY 1, 2, 3, 4, 5;
  RETURN NULL;
END $$;

--
-- Name: tg_delivery_attempts__rollup_truncate(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_delivery_attempts__rollup_truncate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  TRUNCATE delivery_attempt_rollups;
  RETURN NULL;
END $$;

--
-- Name: tg_delivery_attempts__stamp(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_delivery_attempts__stamp() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  NEW.change_id := nextval('lazarus_change_seq');
  NEW.change_xid := pg_current_xact_id();
  RETURN NEW;
END;
$$;

--
-- Name: tg_error_groups__hint(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_error_groups__hint() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  hint jsonb;
BEGIN
  IF lazarus_notify_queue_usage() > lazarus_notify_queue_threshold() THEN
    RETURN NULL;
  END IF;
  -- The same shape as tg_lazarus__notify's hints, for anyone else LISTENing on lazarus_changes.
  SELECT jsonb_build_object(
           't', 'error_groups',
           'op', lower(TG_OP),
           'n', count(*),
           'max', max(change_id),
           'ids', (SELECT coalesce(jsonb_agg(id), '[]'::jsonb)
                     FROM (SELECT id FROM changed WHERE change_xid = pg_current_xact_id() LIMIT 50) firsts))
    INTO hint
    FROM changed
   WHERE change_xid = pg_current_xact_id()
  HAVING count(*) > 0;
  IF hint IS NOT NULL THEN
    PERFORM pg_notify('lazarus_changes', hint::text);
  END IF;
  RETURN NULL;
END $$;

--
-- Name: tg_error_groups__stamp(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_error_groups__stamp() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  NEW.change_id := nextval('lazarus_change_seq');
  NEW.change_xid := pg_current_xact_id();
  RETURN NEW;
END $$;

--
-- Name: tg_lazarus__notify(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_lazarus__notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  hint jsonb;
BEGIN
  IF lazarus_notify_queue_usage() > lazarus_notify_queue_threshold() THEN
    RETURN NULL;
  END IF;
  SELECT jsonb_build_object(
           't', coalesce(TG_ARGV[0], TG_TABLE_NAME),
           'op', lower(TG_OP),
           'n', count(*),
           'max', max(change_id),
           'ids', (SELECT coalesce(jsonb_agg(id), '[]'::jsonb) FROM (SELECT id FROM changed LIMIT 50) firsts))
    INTO hint
    FROM changed
  HAVING count(*) > 0;
  IF hint IS NOT NULL AND lazarus_hint_turn() THEN
    PERFORM pg_notify('lazarus_changes', hint::text);
  END IF;
  RETURN NULL;
END $$;

--
-- Name: tg_retry_policies__webhook_columns(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tg_retry_policies__webhook_columns() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  -- A writer of the previous release set the webhook columns and not the target: follow them.
  IF (TG_OP = 'INSERT' AND NEW.target_kind IS NULL AND NEW.target_url IS NOT NULL)
     OR (TG_OP = 'UPDATE' AND (NEW.target_kind, NEW.target_settings) IS NOT DISTINCT FROM (OLD.target_kind, OLD.target_settings)
         AND (NEW.target_url, NEW.signing_secret) IS DISTINCT FROM (OLD.target_url, OLD.signing_secret)) THEN
    NEW.target_kind := CASE WHEN NEW.target_url IS NOT NULL THEN 'webhook' END;
    NEW.target_settings := CASE WHEN NEW.target_url IS NOT NULL
                                THEN jsonb_strip_nulls(jsonb_build_object('url', NEW.target_url, 'secret', NEW.signing_secret)) END;
  END IF;
  NEW.target_url := CASE WHEN NEW.target_kind = 'webhook' THEN NEW.target_settings ->> 'url' END;
  NEW.signing_secret := CASE WHEN NEW.target_kind = 'webhook' THEN NEW.target_settings ->> 'secret' END;
  RETURN NEW;
END $$;

--
-- Name: alert_rule_windows; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alert_rule_windows (
    rule_id bigint NOT NULL,
    started_at timestamp(6) with time zone NOT NULL,
    raised integer NOT NULL,
    digest_id bigint
);

--
-- Name: alert_rules; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alert_rules (
    id bigint NOT NULL,
    name text NOT NULL,
    trigger public."AlertTrigger" NOT NULL,
    threshold integer,
    window_seconds integer DEFAULT 900 NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    target_url text NOT NULL,
    format public."AlertFormat" DEFAULT 'STANDARD'::public."AlertFormat" NOT NULL,
    signing_secret text NOT NULL,
    allow_private_target boolean DEFAULT false NOT NULL,
    created_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_by text,
    max_alerts_per_window integer DEFAULT 10 NOT NULL,
    cap_window_seconds integer DEFAULT 300 NOT NULL,
    CONSTRAINT alert_rules_cap_check CHECK (((max_alerts_per_window >= 1) AND (max_alerts_per_window <= 100000))),
    CONSTRAINT alert_rules_cap_window_check CHECK (((cap_window_seconds >= 1) AND (cap_window_seconds <= 2592000))),
    CONSTRAINT alert_rules_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200))),
    CONSTRAINT alert_rules_secret_check CHECK (((length(signing_secret) >= 16) AND (length(signing_secret) <= 500))),
    CONSTRAINT alert_rules_target_check CHECK (((target_url ~ '^https?://'::text) AND (length(target_url) <= 2000))),
    CONSTRAINT alert_rules_threshold_check CHECK ((((trigger = ANY (ARRAY['EXHAUSTED_RATE'::public."AlertTrigger", 'OLDEST_PENDING_AGE'::public."AlertTrigger", 'BACKLOG'::public."AlertTrigger"])) = (threshold IS NOT NULL)) AND (COALESCE(threshold, 0) >= 0))),
    CONSTRAINT alert_rules_window_check CHECK (((window_seconds >= 1) AND (window_seconds <= 2592000)))
);

--
-- Name: alert_rules_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.alert_rules_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: alert_rules_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.alert_rules_id_seq OWNED BY public.alert_rules.id;

--
-- Name: alert_throttles; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alert_throttles (
    rule_id bigint NOT NULL,
    subject text NOT NULL,
    last_raised_at timestamp(6) with time zone NOT NULL
);

--
-- Name: alerts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alerts (
    id bigint NOT NULL,
    rule_id bigint,
    rule_name text NOT NULL,
    trigger public."AlertTrigger" NOT NULL,
    subject text NOT NULL,
    summary text NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    delivery_status public."AlertDeliveryStatus" DEFAULT 'PENDING'::public."AlertDeliveryStatus" NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    lease_owner text,
    lease_expires_at timestamp(6) with time zone,
    last_error text,
    last_status_code integer,
    delivered_at timestamp(6) with time zone,
    digest_id bigint,
    CONSTRAINT alerts_delivered_check CHECK (((delivery_status = 'DELIVERED'::public."AlertDeliveryStatus") = (delivered_at IS NOT NULL))),
    CONSTRAINT alerts_lease_check CHECK (((delivery_status = 'DELIVERING'::public."AlertDeliveryStatus") = ((lease_owner IS NOT NULL) AND (lease_expires_at IS NOT NULL))))
);

--
-- Name: alerts_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.alerts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: alerts_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.alerts_id_seq OWNED BY public.alerts.id;

--
-- Name: bridge_states; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bridge_states (
    name text NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    paused_by text,
    paused_at timestamp(6) with time zone,
    updated_at timestamp(6) with time zone DEFAULT now() NOT NULL,
    CONSTRAINT bridge_states_name_check CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$'::text)),
    CONSTRAINT bridge_states_paused_check CHECK ((paused = (paused_at IS NOT NULL)))
);

--
-- Name: TABLE bridge_states; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON TABLE public.bridge_states IS 'Operator state of the broker bridges declared in LAZARUS_BRIDGES: paused or not (pauseBridge/resumeBridge).';

--
-- Name: dead_letter_actions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_letter_actions (
    id bigint NOT NULL,
    dead_letter_id bigint NOT NULL,
    action public."ActionKind" NOT NULL,
    actor text NOT NULL,
    reason text,
    before jsonb,
    after jsonb,
    redrive_id bigint,
    created_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    transform_id bigint
);

--
-- Name: dead_letter_actions_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.dead_letter_actions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: dead_letter_actions_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.dead_letter_actions_id_seq OWNED BY public.dead_letter_actions.id;

--
-- Name: dead_letter_error_texts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_letter_error_texts (
    dead_letter_id bigint NOT NULL,
    error_message text NOT NULL,
    error_stack text
);

--
-- Name: dead_letter_rollups; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_letter_rollups (
    id bigint NOT NULL,
    bucket timestamp(6) with time zone NOT NULL,
    event_type text NOT NULL,
    queue text NOT NULL,
    error_kind public."ErrorKind" NOT NULL,
    status public."DeadLetterStatus" NOT NULL,
    count bigint NOT NULL,
    attempts bigint DEFAULT 0 NOT NULL
);

--
-- Name: dead_letter_rollups_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.dead_letter_rollups ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.dead_letter_rollups_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: dead_letter_signature_rollups; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_letter_signature_rollups (
    id bigint NOT NULL,
    bucket timestamp(6) with time zone NOT NULL,
    error_signature text NOT NULL,
    event_type text NOT NULL,
    queue text NOT NULL,
    error_kind public."ErrorKind" NOT NULL,
    count bigint NOT NULL
);

--
-- Name: dead_letter_signature_rollups_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.dead_letter_signature_rollups ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.dead_letter_signature_rollups_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: dead_letter_tombstones; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_letter_tombstones (
    id bigint NOT NULL,
    event_type text NOT NULL,
    queue text NOT NULL,
    source text NOT NULL,
    ordering_key text,
    error_kind public."ErrorKind" NOT NULL,
    status public."DeadLetterStatus" NOT NULL,
    error_signature text NOT NULL,
    attempts integer NOT NULL,
    created_at timestamp(6) with time zone NOT NULL,
    updated_at timestamp(6) with time zone NOT NULL,
    next_attempt_at timestamp(6) with time zone,
    deleted_at timestamp(6) with time zone DEFAULT now() NOT NULL,
    change_id bigint DEFAULT nextval('public.lazarus_change_seq'::regclass) NOT NULL,
    change_xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    fingerprint text,
    error_group_id bigint
);

--
-- Name: dead_letters; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_letters (
    id bigint NOT NULL,
    event_type text NOT NULL,
    queue text DEFAULT 'default'::text NOT NULL,
    source text DEFAULT 'unknown'::text NOT NULL,
    ordering_key text,
    ordering_seq bigint,
    dedupe_key text,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    error_kind public."ErrorKind" DEFAULT 'UNKNOWN'::public."ErrorKind" NOT NULL,
    error_message text DEFAULT ''::text NOT NULL,
    error_stack text,
    max_attempts integer,
    occurred_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    created_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    error_signature text,
    fingerprint text,
    error_group_id bigint,
    status public."DeadLetterStatus",
    attempts integer,
    next_attempt_at timestamp(6) with time zone,
    lease_owner text,
    lease_token uuid,
    lease_expires_at timestamp(6) with time zone,
    resolved_at timestamp(6) with time zone,
    resolved_by text,
    resolution_reason text,
    origin jsonb,
    CONSTRAINT dead_letters_dedupe_key_check CHECK (((dedupe_key IS NULL) OR ((length(dedupe_key) >= 1) AND (length(dedupe_key) <= 500)))),
    CONSTRAINT dead_letters_event_type_check CHECK (((length(event_type) >= 1) AND (length(event_type) <= 200))),
    CONSTRAINT dead_letters_fingerprint_check CHECK (((fingerprint IS NULL) OR ((length(fingerprint) >= 1) AND (length(fingerprint) <= 300)))),
    CONSTRAINT dead_letters_headers_depth_check CHECK ((NOT jsonb_path_exists(headers, 'strict $.**{101}'::jsonpath))),
    CONSTRAINT dead_letters_headers_size_check CHECK (((jsonb_typeof(headers) = 'object'::text) AND (octet_length((headers)::text) <= 65536))),
    CONSTRAINT dead_letters_max_attempts_check CHECK (((max_attempts IS NULL) OR ((max_attempts >= 1) AND (max_attempts <= 1000)))),
    CONSTRAINT dead_letters_ordering_key_check CHECK (((ordering_key IS NULL) OR ((length(ordering_key) >= 1) AND (length(ordering_key) <= 500)))),
    CONSTRAINT dead_letters_payload_depth_check CHECK ((NOT jsonb_path_exists(payload, 'strict $.**{101}'::jsonpath))),
    CONSTRAINT dead_letters_payload_size_check CHECK ((octet_length((payload)::text) <= 262144)),
    CONSTRAINT dead_letters_queue_check CHECK (((length(queue) >= 1) AND (length(queue) <= 200))),
    CONSTRAINT dead_letters_source_check CHECK (((length(source) >= 1) AND (length(source) <= 200)))
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_analyze_scale_factor='0.02');

--
-- Name: TABLE dead_letters; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON TABLE public.dead_letters IS 'What is written once per failed event. Its queue state (status, attempts, next attempt, lease, resolution, version) is in dead_letter_states (same id); the view dead_letters_current shows both.';

--
-- Name: COLUMN dead_letters.status; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letters.status IS 'Input only, always NULL: an INSERT may set the initial status; it is moved to dead_letter_states. Current status: dead_letters_current.status.';

--
-- Name: COLUMN dead_letters.attempts; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letters.attempts IS 'Input only, always NULL (moved to dead_letter_states on insert). Current: dead_letters_current.attempts.';

--
-- Name: COLUMN dead_letters.next_attempt_at; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letters.next_attempt_at IS 'Input only, always NULL: an INSERT may set the first due time (default now). Current: dead_letters_current.next_attempt_at.';

--
-- Name: COLUMN dead_letters.lease_owner; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letters.lease_owner IS 'Input only, always NULL. Current lease: dead_letters_current.';

--
-- Name: COLUMN dead_letters.lease_token; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letters.lease_token IS 'Input only, always NULL. Current lease: dead_letters_current.';

--
-- Name: COLUMN dead_letters.lease_expires_at; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letters.lease_expires_at IS 'Input only, always NULL. Current lease: dead_letters_current.';

--
-- Name: COLUMN dead_letters.resolved_at; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letters.resolved_at IS 'Input only, always NULL. Current resolution: dead_letters_current.';

--
-- Name: COLUMN dead_letters.resolved_by; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letters.resolved_by IS 'Input only, always NULL. Current resolution: dead_letters_current.';

--
-- Name: COLUMN dead_letters.resolution_reason; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letters.resolution_reason IS 'Input only, always NULL. Current resolution: dead_letters_current.';

--
-- Name: COLUMN dead_letters.origin; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.dead_letters.origin IS 'Source coordinates of an event taken in by a broker bridge ({"kind": "amqp"|"nats"|"redis", ...}, docs/brokers.md), or NULL. Written once.';

--
-- Name: dead_letters_current; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.dead_letters_current AS
 SELECT d.id,
    d.event_type,
    d.queue,
    d.source,
    d.ordering_key,
    d.ordering_seq,
    d.dedupe_key,
    d.payload,
    d.headers,
    d.error_kind,
    d.error_message,
    d.error_stack,
    s.status,
    s.attempts,
    d.max_attempts,
    s.next_attempt_at,
    s.lease_owner,
    s.lease_token,
    s.lease_expires_at,
    s.resolved_at,
    s.resolved_by,
    s.resolution_reason,
    d.occurred_at,
    d.created_at,
    s.updated_at,
    s.version,
    s.change_id,
    s.change_xid,
    d.error_signature,
    s.delivery_generation,
    d.fingerprint,
    d.error_group_id,
    d.origin
   FROM (public.dead_letters d
     JOIN public.dead_letter_states s ON ((s.id = d.id)));

--
-- Name: VIEW dead_letters_current; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON VIEW public.dead_letters_current IS 'Every dead letter with its current queue state: the write-once row (dead_letters) joined with its state (dead_letter_states) by id. Read and change state here; producers insert into dead_letters.';

--
-- Name: dead_letters_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.dead_letters_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: dead_letters_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.dead_letters_id_seq OWNED BY public.dead_letters.id;

--
-- Name: delivery_attempt_rollups; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.delivery_attempt_rollups (
    id bigint NOT NULL,
    bucket timestamp(6) with time zone NOT NULL,
    event_type text NOT NULL,
    target text NOT NULL,
    outcome public."AttemptOutcome" NOT NULL,
    latency_bucket smallint NOT NULL,
    count bigint NOT NULL
);

--
-- Name: TABLE delivery_attempt_rollups; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON TABLE public.delivery_attempt_rollups IS 'Signed deltas of delivery attempts per UTC minute of started_at, event type, target, outcome and latency bucket; sum(count) per group. Counts attempts made, including those of events deleted since; minutes older than two days are trimmed.';

--
-- Name: delivery_attempt_rollups_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.delivery_attempt_rollups ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.delivery_attempt_rollups_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: delivery_attempts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.delivery_attempts (
    id bigint NOT NULL,
    dead_letter_id bigint NOT NULL,
    attempt_number integer NOT NULL,
    worker_id text NOT NULL,
    started_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    finished_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    duration_ms integer NOT NULL,
    outcome public."AttemptOutcome" NOT NULL,
    status_code integer,
    error_message text,
    response_body text,
    change_id bigint DEFAULT nextval('public.lazarus_change_seq'::regclass) NOT NULL,
    change_xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    failure_kind public."DeliveryFailureKind",
    permanent_reason public."PermanentReason",
    target text,
    request_headers jsonb,
    request_body_bytes integer,
    request_body_sha256 text,
    response_headers jsonb,
    response_body_truncated boolean
);

--
-- Name: delivery_attempts_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.delivery_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: delivery_attempts_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.delivery_attempts_id_seq OWNED BY public.delivery_attempts.id;

--
-- Name: error_group_actions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.error_group_actions (
    id bigint NOT NULL,
    group_id bigint NOT NULL,
    from_status public."ErrorGroupStatus",
    to_status public."ErrorGroupStatus" NOT NULL,
    actor text NOT NULL,
    reason text,
    note text,
    created_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    change_id bigint DEFAULT nextval('public.lazarus_change_seq'::regclass),
    change_xid xid8 DEFAULT pg_current_xact_id()
);

--
-- Name: error_group_actions_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.error_group_actions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: error_group_actions_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.error_group_actions_id_seq OWNED BY public.error_group_actions.id;

--
-- Name: error_group_deltas; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.error_group_deltas (
    id bigint NOT NULL,
    group_id bigint NOT NULL,
    event_type text NOT NULL,
    error_kind public."ErrorKind" NOT NULL,
    signature text NOT NULL,
    bucket timestamp(6) with time zone NOT NULL,
    total bigint NOT NULL,
    unresolved bigint NOT NULL,
    failures bigint NOT NULL,
    requeued bigint NOT NULL,
    first_seen timestamp(6) with time zone,
    last_seen timestamp(6) with time zone,
    queues text[],
    sources text[],
    sample_id bigint
);

--
-- Name: error_group_deltas_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.error_group_deltas ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.error_group_deltas_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: error_group_hours; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.error_group_hours (
    group_id bigint NOT NULL,
    bucket timestamp(6) with time zone NOT NULL,
    count bigint NOT NULL
);

--
-- Name: error_group_trend_window; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.error_group_trend_window (
    "only" boolean DEFAULT true NOT NULL,
    start timestamp(6) with time zone NOT NULL,
    CONSTRAINT error_group_trend_window_only_check CHECK ("only")
);

--
-- Name: error_groups; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.error_groups (
    id bigint NOT NULL,
    event_type text NOT NULL,
    error_kind public."ErrorKind" NOT NULL,
    signature text NOT NULL,
    status public."ErrorGroupStatus" DEFAULT 'OPEN'::public."ErrorGroupStatus" NOT NULL,
    first_seen timestamp(6) with time zone NOT NULL,
    last_seen timestamp(6) with time zone NOT NULL,
    total_count bigint DEFAULT 0 NOT NULL,
    unresolved_count bigint DEFAULT 0 NOT NULL,
    queues text[] DEFAULT '{}'::text[] NOT NULL,
    sources text[] DEFAULT '{}'::text[] NOT NULL,
    sample_dead_letter_id bigint,
    regressed_at timestamp(6) with time zone,
    note text,
    created_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    trend_count bigint DEFAULT 0 NOT NULL,
    change_id bigint,
    change_xid xid8,
    CONSTRAINT error_groups_note_check CHECK (((note IS NULL) OR (length(note) <= 2000)))
);

--
-- Name: retry_policies; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.retry_policies (
    event_type text NOT NULL,
    max_attempts integer DEFAULT 10 NOT NULL,
    backoff public."BackoffKind" DEFAULT 'EXPONENTIAL'::public."BackoffKind" NOT NULL,
    base_delay_ms integer DEFAULT 1000 NOT NULL,
    max_delay_ms integer DEFAULT 3600000 NOT NULL,
    timeout_ms integer DEFAULT 10000 NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    ordered boolean DEFAULT false NOT NULL,
    concurrency integer,
    target_url text,
    allow_private_target boolean DEFAULT false NOT NULL,
    signing_secret text,
    permanent_status_codes integer[] DEFAULT ARRAY[400, 401, 403, 404, 405, 410, 413, 415, 422],
    permanent_error_kinds public."ErrorKind"[] DEFAULT ARRAY[]::public."ErrorKind"[],
    created_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_by text,
    target_kind text,
    target_settings jsonb,
    CONSTRAINT retry_policies_base_delay_check CHECK (((base_delay_ms >= 0) AND (base_delay_ms <= 604800000))),
    CONSTRAINT retry_policies_concurrency_check CHECK (((concurrency IS NULL) OR ((concurrency >= 1) AND (concurrency <= 10000)))),
    CONSTRAINT retry_policies_event_type_check CHECK (((length(event_type) >= 1) AND (length(event_type) <= 200))),
    CONSTRAINT retry_policies_max_attempts_check CHECK (((max_attempts >= 1) AND (max_attempts <= 1000))),
    CONSTRAINT retry_policies_max_delay_check CHECK (((max_delay_ms >= base_delay_ms) AND (max_delay_ms <= '2592000000'::bigint))),
    CONSTRAINT retry_policies_target_check CHECK (((target_kind IS NULL) = (target_settings IS NULL))),
    CONSTRAINT retry_policies_target_kind_check CHECK ((target_kind ~ '^[a-z][a-z0-9_]{0,39}$'::text)),
    CONSTRAINT retry_policies_target_settings_check CHECK ((jsonb_typeof(target_settings) = 'object'::text)),
    CONSTRAINT retry_policies_target_url_check CHECK (((target_url IS NULL) OR (target_url ~ '^https?://'::text))),
    CONSTRAINT retry_policies_timeout_check CHECK (((timeout_ms >= 100) AND (timeout_ms <= 300000))),
    CONSTRAINT retry_policies_webhook_target_check CHECK (((target_kind IS DISTINCT FROM 'webhook'::text) OR (COALESCE(((jsonb_typeof((target_settings -> 'url'::text)) = 'string'::text) AND ((target_settings ->> 'url'::text) ~ '^https?://'::text) AND (length((target_settings ->> 'url'::text)) <= 2000)), false) AND (((target_settings -> 'secret'::text) IS NULL) OR (jsonb_typeof((target_settings -> 'secret'::text)) = 'string'::text)))))
);

--
-- Name: COLUMN retry_policies.target_url; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.retry_policies.target_url IS 'Deprecated: the webhook kind''s url, kept in step by a trigger for processes of the previous release; NULL for other kinds. Read target_kind and target_settings.';

--
-- Name: COLUMN retry_policies.signing_secret; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.retry_policies.signing_secret IS 'Deprecated: the webhook kind''s secret, kept in step by a trigger for processes of the previous release. Read target_settings.';

--
-- Name: lazarus_blocked_keys; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.lazarus_blocked_keys AS
 WITH heads AS (
         SELECT DISTINCT ON (dead_letter_states.event_type, dead_letter_states.ordering_key) dead_letter_states.id,
            dead_letter_states.event_type,
            dead_letter_states.ordering_key,
            dead_letter_states.status,
            (count(*) OVER key_queue - 1) AS held_back
           FROM public.dead_letter_states
          WHERE ((dead_letter_states.ordering_key IS NOT NULL) AND (dead_letter_states.status = ANY (ARRAY['PENDING'::public."DeadLetterStatus", 'PROCESSING'::public."DeadLetterStatus", 'EXHAUSTED'::public."DeadLetterStatus"])))
          WINDOW key_queue AS (PARTITION BY dead_letter_states.event_type, dead_letter_states.ordering_key ORDER BY COALESCE(dead_letter_states.ordering_seq, ('-1'::integer)::bigint), dead_letter_states.id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
          ORDER BY dead_letter_states.event_type, dead_letter_states.ordering_key, COALESCE(dead_letter_states.ordering_seq, ('-1'::integer)::bigint), dead_letter_states.id
        )
 SELECT h.ordering_key,
    h.id AS head_id,
    h.event_type AS head_event_type,
    d.error_signature AS head_error_signature,
    d.created_at AS head_created_at,
    h.held_back
   FROM (heads h
     JOIN public.dead_letters d ON ((d.id = h.id)))
  WHERE ((h.status = 'EXHAUSTED'::public."DeadLetterStatus") AND (h.held_back > 0) AND ( SELECT p.ordered
           FROM public.retry_policies p
          WHERE (p.event_type = ANY (ARRAY[h.event_type, '*'::text]))
          ORDER BY (p.event_type = '*'::text)
         LIMIT 1))
  ORDER BY h.held_back DESC, h.ordering_key, h.event_type;

--
-- Name: lazarus_dead_letters; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.lazarus_dead_letters AS
 SELECT dead_letters_current.id,
    dead_letters_current.event_type,
    dead_letters_current.queue,
    dead_letters_current.source,
    dead_letters_current.ordering_key,
    dead_letters_current.ordering_seq,
    dead_letters_current.dedupe_key,
    dead_letters_current.payload,
    dead_letters_current.headers,
    dead_letters_current.error_kind,
    dead_letters_current.error_message,
    dead_letters_current.error_stack,
    dead_letters_current.status,
    dead_letters_current.attempts,
    dead_letters_current.max_attempts,
    dead_letters_current.next_attempt_at,
    dead_letters_current.lease_owner,
    dead_letters_current.lease_token,
    dead_letters_current.lease_expires_at,
    dead_letters_current.resolved_at,
    dead_letters_current.resolved_by,
    dead_letters_current.resolution_reason,
    dead_letters_current.occurred_at,
    dead_letters_current.created_at,
    dead_letters_current.updated_at,
    dead_letters_current.version,
    dead_letters_current.change_id,
    dead_letters_current.change_xid,
    dead_letters_current.error_signature,
    dead_letters_current.delivery_generation,
    dead_letters_current.fingerprint,
    dead_letters_current.error_group_id
   FROM public.dead_letters_current;

--
-- Name: VIEW lazarus_dead_letters; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON VIEW public.lazarus_dead_letters IS 'Deprecated name of dead_letters_current, kept for one release for processes of the previous one.';

--
-- Name: lazarus_dlq_depth; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.lazarus_dlq_depth AS
 SELECT h.status,
    h.events,
    o.oldest_created_at
   FROM (( SELECT b.status,
            (sum(b.events))::bigint AS events,
            min(b.bucket) AS first_bucket
           FROM ( SELECT dead_letter_rollups.status,
                    dead_letter_rollups.bucket,
                    sum(dead_letter_rollups.count) AS events
                   FROM public.dead_letter_rollups
                  GROUP BY dead_letter_rollups.status, dead_letter_rollups.bucket
                 HAVING (sum(dead_letter_rollups.count) <> (0)::numeric)) b
          GROUP BY b.status) h
     CROSS JOIN LATERAL ( SELECT min(d.created_at) AS oldest_created_at
           FROM (public.dead_letters d
             JOIN public.dead_letter_states s ON ((s.id = d.id)))
          WHERE ((s.status = h.status) AND (d.created_at >= h.first_bucket) AND (d.created_at < (h.first_bucket + '01:00:00'::interval)))) o)
  ORDER BY h.status;

--
-- Name: lazarus_failures_last_24h; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.lazarus_failures_last_24h AS
 SELECT g.event_type,
    g.error_kind,
    g.error_signature,
    g.failures,
    g.first_seen,
    g.last_seen,
    s.id AS sample_id
   FROM (( SELECT dead_letters.event_type,
            dead_letters.error_kind,
            dead_letters.error_signature,
            count(*) AS failures,
            min(dead_letters.created_at) AS first_seen,
            max(dead_letters.created_at) AS last_seen
           FROM public.dead_letters
          WHERE (dead_letters.created_at >= (now() - '24:00:00'::interval))
          GROUP BY dead_letters.event_type, dead_letters.error_kind, dead_letters.error_signature) g
     CROSS JOIN LATERAL ( SELECT d.id
           FROM public.dead_letters d
          WHERE ((d.error_signature = g.error_signature) AND (d.created_at = g.first_seen) AND (d.event_type = g.event_type) AND (d.error_kind = g.error_kind))
          ORDER BY d.id
         LIMIT 1) s)
  ORDER BY g.failures DESC, g.event_type, g.error_signature;

--
-- Name: lazarus_top_errors; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.lazarus_top_errors AS
 SELECT g.error_signature,
    g.failures,
    g.first_seen,
    g.last_seen,
    s.id AS sample_id,
    g.unresolved
   FROM (( SELECT d.error_signature,
            count(*) AS failures,
            min(d.created_at) AS first_seen,
            max(d.created_at) AS last_seen,
            count(*) FILTER (WHERE (t.status = ANY (ARRAY['PENDING'::public."DeadLetterStatus", 'PROCESSING'::public."DeadLetterStatus", 'EXHAUSTED'::public."DeadLetterStatus"]))) AS unresolved
           FROM (public.dead_letters d
             JOIN public.dead_letter_states t ON ((t.id = d.id)))
          GROUP BY d.error_signature) g
     CROSS JOIN LATERAL ( SELECT d.id
           FROM public.dead_letters d
          WHERE ((d.error_signature = g.error_signature) AND (d.created_at = g.first_seen))
          ORDER BY d.id
         LIMIT 1) s)
  ORDER BY g.failures DESC, g.error_signature;

--
-- Name: rate_limit_windows; Type: TABLE; Schema: public; Owner: -
--

CREATE UNLOGGED TABLE public.rate_limit_windows (
    principal text NOT NULL,
    window_start timestamp(6) with time zone NOT NULL,
    count integer DEFAULT 0 NOT NULL
);

--
-- Name: redrive_actions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.redrive_actions (
    id bigint NOT NULL,
    redrive_id bigint NOT NULL,
    action public."RedriveActionKind" NOT NULL,
    actor text NOT NULL,
    reason text,
    before jsonb,
    after jsonb,
    created_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

--
-- Name: redrive_actions_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.redrive_actions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: redrive_actions_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.redrive_actions_id_seq OWNED BY public.redrive_actions.id;

--
-- Name: redrive_items; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.redrive_items (
    redrive_id bigint NOT NULL,
    dead_letter_id bigint NOT NULL
);

--
-- Name: redrives; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.redrives (
    id bigint NOT NULL,
    status public."RedriveStatus" DEFAULT 'RUNNING'::public."RedriveStatus" NOT NULL,
    filter jsonb NOT NULL,
    rate_per_second integer NOT NULL,
    reset_attempts boolean DEFAULT false NOT NULL,
    total integer DEFAULT 0 NOT NULL,
    processed integer DEFAULT 0 NOT NULL,
    requeued integer DEFAULT 0 NOT NULL,
    skipped integer DEFAULT 0 NOT NULL,
    last_id bigint DEFAULT 0 NOT NULL,
    created_by text NOT NULL,
    error text,
    created_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    finished_at timestamp(6) with time zone,
    force boolean DEFAULT false NOT NULL,
    reason text,
    batch_size integer DEFAULT 500 NOT NULL,
    lease_owner text,
    lease_expires_at timestamp(6) with time zone,
    start_rate_per_second integer,
    ramp_seconds integer DEFAULT 0 NOT NULL,
    ramp_started_at timestamp(6) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    pause_when_failure_rate_above double precision,
    window_size integer DEFAULT 100 NOT NULL,
    guard_after_attempt_id bigint DEFAULT 0 NOT NULL,
    paused_by public."RedrivePausedBy",
    paused_reason text,
    destination text DEFAULT 'POLICY'::text NOT NULL,
    CONSTRAINT redrives_batch_size_check CHECK (((batch_size >= 1) AND (batch_size <= 5000))),
    CONSTRAINT redrives_counts_check CHECK (((processed >= 0) AND (requeued >= 0) AND (skipped >= 0) AND (total >= 0))),
    CONSTRAINT redrives_destination_check CHECK ((destination = ANY (ARRAY['POLICY'::text, 'SOURCE'::text]))),
    CONSTRAINT redrives_guard_check CHECK (((pause_when_failure_rate_above IS NULL) OR ((pause_when_failure_rate_above >= (0)::double precision) AND (pause_when_failure_rate_above <= (1)::double precision)))),
    CONSTRAINT redrives_paused_check CHECK (((status = 'PAUSED'::public."RedriveStatus") = (paused_by IS NOT NULL))),
    CONSTRAINT redrives_ramp_seconds_check CHECK (((ramp_seconds >= 0) AND (ramp_seconds <= 604800))),
    CONSTRAINT redrives_rate_check CHECK (((rate_per_second >= 1) AND (rate_per_second <= 100000))),
    CONSTRAINT redrives_start_rate_check CHECK (((start_rate_per_second IS NULL) OR ((start_rate_per_second >= 1) AND (start_rate_per_second <= rate_per_second)))),
    CONSTRAINT redrives_window_size_check CHECK (((window_size >= 1) AND (window_size <= 10000)))
);

--
-- Name: redrives_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.redrives_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: redrives_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.redrives_id_seq OWNED BY public.redrives.id;

--
-- Name: source_redirects; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.source_redirects (
    id bigint NOT NULL,
    kind text NOT NULL,
    from_place text NOT NULL,
    to_place text NOT NULL,
    to_bridge text,
    updated_by text NOT NULL,
    created_at timestamp(6) with time zone DEFAULT now() NOT NULL,
    updated_at timestamp(6) with time zone DEFAULT now() NOT NULL,
    CONSTRAINT source_redirects_from_place_check CHECK (((length(from_place) >= 1) AND (length(from_place) <= 1024))),
    CONSTRAINT source_redirects_kind_check CHECK ((kind = ANY (ARRAY['amqp'::text, 'nats'::text, 'redis'::text]))),
    CONSTRAINT source_redirects_to_bridge_check CHECK (((length(to_bridge) >= 1) AND (length(to_bridge) <= 100))),
    CONSTRAINT source_redirects_to_place_check CHECK (((length(to_place) >= 1) AND (length(to_place) <= 1024)))
);

--
-- Name: source_redirects_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.source_redirects_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: source_redirects_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.source_redirects_id_seq OWNED BY public.source_redirects.id;

--
-- Name: transform_items; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.transform_items (
    transform_id bigint NOT NULL,
    dead_letter_id bigint NOT NULL,
    payload_md5 uuid NOT NULL
);

--
-- Name: transforms; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.transforms (
    id bigint NOT NULL,
    status public."TransformStatus" DEFAULT 'APPLIED'::public."TransformStatus" NOT NULL,
    kind public."PatchKind" NOT NULL,
    patch jsonb NOT NULL,
    filter jsonb NOT NULL,
    requeue boolean DEFAULT false NOT NULL,
    reason text,
    created_by text NOT NULL,
    matched integer DEFAULT 0 NOT NULL,
    changed integer DEFAULT 0 NOT NULL,
    unchanged integer DEFAULT 0 NOT NULL,
    failed integer DEFAULT 0 NOT NULL,
    created_at timestamp(6) with time zone DEFAULT now() NOT NULL,
    undone_at timestamp(6) with time zone,
    undone_by text,
    undo_reason text,
    restored integer DEFAULT 0 NOT NULL,
    kept_edited integer DEFAULT 0 NOT NULL,
    kept_missing integer DEFAULT 0 NOT NULL,
    skip_failing boolean DEFAULT false NOT NULL,
    processed integer DEFAULT 0 NOT NULL,
    skipped integer DEFAULT 0 NOT NULL,
    skipped_ids bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    failures jsonb DEFAULT '[]'::jsonb NOT NULL,
    undo_processed integer DEFAULT 0 NOT NULL,
    undo_last_id bigint DEFAULT 0 NOT NULL,
    kept_edited_ids bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    kept_missing_ids bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    error text,
    lease_owner text,
    lease_expires_at timestamp(6) with time zone,
    applied_at timestamp(6) with time zone,
    updated_at timestamp(6) with time zone DEFAULT now() NOT NULL,
    CONSTRAINT transforms_counts_check CHECK (((matched >= 0) AND (changed >= 0) AND (unchanged >= 0) AND (failed >= 0) AND (restored >= 0) AND (kept_edited >= 0) AND (kept_missing >= 0))),
    CONSTRAINT transforms_progress_check CHECK (((processed >= 0) AND (processed <= matched) AND (skipped >= 0) AND (undo_processed >= 0))),
    CONSTRAINT transforms_undone_check CHECK (((status = 'UNDONE'::public."TransformStatus") = ((undone_at IS NOT NULL) AND (undone_by IS NOT NULL))))
);

--
-- Name: transforms_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.transforms_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: transforms_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.transforms_id_seq OWNED BY public.transforms.id;

--
-- Name: alert_rules id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alert_rules ALTER COLUMN id SET DEFAULT nextval('public.alert_rules_id_seq'::regclass);

--
-- Name: alerts id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alerts ALTER COLUMN id SET DEFAULT nextval('public.alerts_id_seq'::regclass);

--
-- Name: dead_letter_actions id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letter_actions ALTER COLUMN id SET DEFAULT nextval('public.dead_letter_actions_id_seq'::regclass);

--
-- Name: dead_letters id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters ALTER COLUMN id SET DEFAULT nextval('public.dead_letters_id_seq'::regclass);

--
-- Name: dead_letters_current id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN id SET DEFAULT nextval('public.dead_letters_id_seq'::regclass);

--
-- Name: dead_letters_current queue; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN queue SET DEFAULT 'default'::text;

--
-- Name: dead_letters_current source; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN source SET DEFAULT 'unknown'::text;

--
-- Name: dead_letters_current payload; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN payload SET DEFAULT '{}'::jsonb;

--
-- Name: dead_letters_current headers; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN headers SET DEFAULT '{}'::jsonb;

--
-- Name: dead_letters_current error_kind; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN error_kind SET DEFAULT 'UNKNOWN'::public."ErrorKind";

--
-- Name: dead_letters_current error_message; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN error_message SET DEFAULT ''::text;

--
-- Name: dead_letters_current status; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN status SET DEFAULT 'PENDING'::public."DeadLetterStatus";

--
-- Name: dead_letters_current attempts; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN attempts SET DEFAULT 0;

--
-- Name: dead_letters_current next_attempt_at; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN next_attempt_at SET DEFAULT CURRENT_TIMESTAMP;

--
-- Name: dead_letters_current occurred_at; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN occurred_at SET DEFAULT CURRENT_TIMESTAMP;

--
-- Name: dead_letters_current created_at; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN created_at SET DEFAULT CURRENT_TIMESTAMP;

--
-- Name: dead_letters_current updated_at; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN updated_at SET DEFAULT CURRENT_TIMESTAMP;

--
-- Name: dead_letters_current delivery_generation; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters_current ALTER COLUMN delivery_generation SET DEFAULT 0;

--
-- Name: delivery_attempts id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery_attempts ALTER COLUMN id SET DEFAULT nextval('public.delivery_attempts_id_seq'::regclass);

--
-- Name: error_group_actions id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.error_group_actions ALTER COLUMN id SET DEFAULT nextval('public.error_group_actions_id_seq'::regclass);

--
-- Name: redrive_actions id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.redrive_actions ALTER COLUMN id SET DEFAULT nextval('public.redrive_actions_id_seq'::regclass);

--
-- Name: redrives id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.redrives ALTER COLUMN id SET DEFAULT nextval('public.redrives_id_seq'::regclass);

--
-- Name: source_redirects id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.source_redirects ALTER COLUMN id SET DEFAULT nextval('public.source_redirects_id_seq'::regclass);

--
-- Name: transforms id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transforms ALTER COLUMN id SET DEFAULT nextval('public.transforms_id_seq'::regclass);

--
-- Name: alert_rule_windows alert_rule_windows_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alert_rule_windows
    ADD CONSTRAINT alert_rule_windows_pkey PRIMARY KEY (rule_id);

--
-- Name: alert_rules alert_rules_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alert_rules
    ADD CONSTRAINT alert_rules_pkey PRIMARY KEY (id);

--
-- Name: alert_throttles alert_throttles_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alert_throttles
    ADD CONSTRAINT alert_throttles_pkey PRIMARY KEY (rule_id, subject);

--
-- Name: alerts alerts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alerts
    ADD CONSTRAINT alerts_pkey PRIMARY KEY (id);

--
-- Name: bridge_states bridge_states_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bridge_states
    ADD CONSTRAINT bridge_states_pkey PRIMARY KEY (name);

--
-- Name: dead_letter_actions dead_letter_actions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letter_actions
    ADD CONSTRAINT dead_letter_actions_pkey PRIMARY KEY (id);

--
-- Name: dead_letter_error_texts dead_letter_error_texts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letter_error_texts
    ADD CONSTRAINT dead_letter_error_texts_pkey PRIMARY KEY (dead_letter_id);

--
-- Name: dead_letter_rollups dead_letter_rollups_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letter_rollups
    ADD CONSTRAINT dead_letter_rollups_pkey PRIMARY KEY (id);

--
-- Name: dead_letter_signature_rollups dead_letter_signature_rollups_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letter_signature_rollups
    ADD CONSTRAINT dead_letter_signature_rollups_pkey PRIMARY KEY (id);

--
-- Name: dead_letter_states dead_letter_states_deliver_to_source_check; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.dead_letter_states
    ADD CONSTRAINT dead_letter_states_deliver_to_source_check CHECK (((deliver_to_source IS NULL) OR deliver_to_source)) NOT VALID;

--
-- Name: dead_letter_states dead_letter_states_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letter_states
    ADD CONSTRAINT dead_letter_states_pkey PRIMARY KEY (id);

--
-- Name: dead_letter_tombstones dead_letter_tombstones_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letter_tombstones
    ADD CONSTRAINT dead_letter_tombstones_pkey PRIMARY KEY (change_id);

--
-- Name: dead_letters dead_letters_origin_check; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.dead_letters
    ADD CONSTRAINT dead_letters_origin_check CHECK (((origin IS NULL) OR ((jsonb_typeof(origin) = 'object'::text) AND COALESCE(((jsonb_typeof((origin -> 'kind'::text)) = 'string'::text) AND ((origin ->> 'kind'::text) ~ '^[a-z][a-z0-9_]{0,39}$'::text)), false) AND (octet_length((origin)::text) <= 8192)))) NOT VALID;

--
-- Name: dead_letters dead_letters_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (id);

--
-- Name: delivery_attempt_rollups delivery_attempt_rollups_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery_attempt_rollups
    ADD CONSTRAINT delivery_attempt_rollups_pkey PRIMARY KEY (id);

--
-- Name: delivery_attempts delivery_attempts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery_attempts
    ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (id);

--
-- Name: delivery_attempts delivery_attempts_request_body; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.delivery_attempts
    ADD CONSTRAINT delivery_attempts_request_body CHECK (((request_body_bytes >= 0) AND (request_body_sha256 ~ '^[0-9a-f]{64}$'::text))) NOT VALID;

--
-- Name: delivery_attempts delivery_attempts_request_headers_size; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.delivery_attempts
    ADD CONSTRAINT delivery_attempts_request_headers_size CHECK (((jsonb_typeof(request_headers) = 'object'::text) AND (octet_length((request_headers)::text) <= 1024))) NOT VALID;

--
-- Name: delivery_attempts delivery_attempts_response_headers_size; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.delivery_attempts
    ADD CONSTRAINT delivery_attempts_response_headers_size CHECK (((jsonb_typeof(response_headers) = 'object'::text) AND (octet_length((response_headers)::text) <= 2048))) NOT VALID;

--
-- Name: delivery_attempts delivery_attempts_target_size; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.delivery_attempts
    ADD CONSTRAINT delivery_attempts_target_size CHECK ((octet_length(target) <= 256)) NOT VALID;

--
-- Name: error_group_actions error_group_actions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.error_group_actions
    ADD CONSTRAINT error_group_actions_pkey PRIMARY KEY (id);

--
-- Name: error_group_deltas error_group_deltas_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.error_group_deltas
    ADD CONSTRAINT error_group_deltas_pkey PRIMARY KEY (id);

--
-- Name: error_group_hours error_group_hours_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.error_group_hours
    ADD CONSTRAINT error_group_hours_pkey PRIMARY KEY (group_id, bucket);

--
-- Name: error_group_trend_window error_group_trend_window_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.error_group_trend_window
    ADD CONSTRAINT error_group_trend_window_pkey PRIMARY KEY ("only");

--
-- Name: error_groups error_groups_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.error_groups
    ADD CONSTRAINT error_groups_pkey PRIMARY KEY (id);

--
-- Name: rate_limit_windows rate_limit_windows_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rate_limit_windows
    ADD CONSTRAINT rate_limit_windows_pkey PRIMARY KEY (principal, window_start);

--
-- Name: redrive_actions redrive_actions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.redrive_actions
    ADD CONSTRAINT redrive_actions_pkey PRIMARY KEY (id);

--
-- Name: redrive_items redrive_items_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.redrive_items
    ADD CONSTRAINT redrive_items_pkey PRIMARY KEY (redrive_id, dead_letter_id);

--
-- Name: redrives redrives_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.redrives
    ADD CONSTRAINT redrives_pkey PRIMARY KEY (id);

--
-- Name: retry_policies retry_policies_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.retry_policies
    ADD CONSTRAINT retry_policies_pkey PRIMARY KEY (event_type);

--
-- Name: source_redirects source_redirects_kind_from_place_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.source_redirects
    ADD CONSTRAINT source_redirects_kind_from_place_key UNIQUE (kind, from_place);

--
-- Name: source_redirects source_redirects_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.source_redirects
    ADD CONSTRAINT source_redirects_pkey PRIMARY KEY (id);

--
-- Name: transform_items transform_items_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transform_items
    ADD CONSTRAINT transform_items_pkey PRIMARY KEY (transform_id, dead_letter_id);

--
-- Name: transforms transforms_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transforms
    ADD CONSTRAINT transforms_pkey PRIMARY KEY (id);

--
-- Name: alert_rules_name_key; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX alert_rules_name_key ON public.alert_rules USING btree (name);

--
-- Name: alert_rules_trigger_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX alert_rules_trigger_idx ON public.alert_rules USING btree (trigger);

--
-- Name: alerts_digest_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX alerts_digest_idx ON public.alerts USING btree (digest_id);

--
-- Name: alerts_due_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX alerts_due_idx ON public.alerts USING btree (next_attempt_at, id) WHERE (delivery_status = 'PENDING'::public."AlertDeliveryStatus");

--
-- Name: alerts_lease_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX alerts_lease_idx ON public.alerts USING btree (lease_expires_at) WHERE (delivery_status = 'DELIVERING'::public."AlertDeliveryStatus");

--
-- Name: alerts_rule_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX alerts_rule_idx ON public.alerts USING btree (rule_id, id);

--
-- Name: dead_letter_actions_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_actions_created_idx ON public.dead_letter_actions USING btree (created_at);

--
-- Name: dead_letter_actions_dead_letter_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_actions_dead_letter_idx ON public.dead_letter_actions USING btree (dead_letter_id, id);

--
-- Name: dead_letter_actions_transform_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_actions_transform_idx ON public.dead_letter_actions USING btree (transform_id, dead_letter_id) WHERE (transform_id IS NOT NULL);

--
-- Name: dead_letter_error_texts_message_trgm; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_error_texts_message_trgm ON public.dead_letter_error_texts USING gin (error_message public.gin_trgm_ops);

--
-- Name: dead_letter_error_texts_stack_trgm; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_error_texts_stack_trgm ON public.dead_letter_error_texts USING gin (error_stack public.gin_trgm_ops);

--
-- Name: dead_letter_rollups_error_kind_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_rollups_error_kind_idx ON public.dead_letter_rollups USING btree (error_kind, bucket) INCLUDE (status, event_type, queue, count);

--
-- Name: dead_letter_rollups_event_type_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_rollups_event_type_idx ON public.dead_letter_rollups USING btree (event_type, bucket) INCLUDE (status, queue, error_kind, count);

--
-- Name: dead_letter_rollups_group_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_rollups_group_idx ON public.dead_letter_rollups USING btree (bucket, event_type, queue, error_kind, status);

--
-- Name: dead_letter_rollups_queue_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_rollups_queue_idx ON public.dead_letter_rollups USING btree (queue, bucket) INCLUDE (status, event_type, error_kind, count);

--
-- Name: dead_letter_rollups_status_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_rollups_status_idx ON public.dead_letter_rollups USING btree (status, bucket) INCLUDE (event_type, queue, error_kind, count, attempts);

--
-- Name: dead_letter_signature_rollups_bucket_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_signature_rollups_bucket_idx ON public.dead_letter_signature_rollups USING btree (bucket) INCLUDE (error_signature, event_type, queue, error_kind, count);

--
-- Name: dead_letter_states_attempts_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_states_attempts_idx ON public.dead_letter_states USING btree (attempts, id) WHERE (status <> 'PROCESSING'::public."DeadLetterStatus");

--
-- Name: dead_letter_states_change_cursor_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_states_change_cursor_idx ON public.dead_letter_states USING btree (change_xid, change_id);

--
-- Name: dead_letter_states_finished_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_states_finished_idx ON public.dead_letter_states USING btree (resolved_at) WHERE (status = ANY (ARRAY['SUCCEEDED'::public."DeadLetterStatus", 'RESOLVED'::public."DeadLetterStatus", 'DISCARDED'::public."DeadLetterStatus"]));

--
-- Name: dead_letter_states_lease_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_states_lease_idx ON public.dead_letter_states USING btree (lease_expires_at) WHERE (status = 'PROCESSING'::public."DeadLetterStatus");

--
-- Name: dead_letter_states_live_key_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_states_live_key_idx ON public.dead_letter_states USING btree (event_type, ordering_key, COALESCE(ordering_seq, ('-1'::integer)::bigint), id) INCLUDE (status, ordering_seq) WHERE ((ordering_key IS NOT NULL) AND (status = ANY (ARRAY['PENDING'::public."DeadLetterStatus", 'PROCESSING'::public."DeadLetterStatus", 'EXHAUSTED'::public."DeadLetterStatus"])));

--
-- Name: dead_letter_states_next_attempt_order_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_states_next_attempt_order_idx ON public.dead_letter_states USING btree (COALESCE(next_attempt_at, 'infinity'::timestamp with time zone), id) WHERE (status <> 'PROCESSING'::public."DeadLetterStatus");

--
-- Name: dead_letter_states_pending_type_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_states_pending_type_idx ON public.dead_letter_states USING btree (event_type, next_attempt_at, id) WHERE (status = 'PENDING'::public."DeadLetterStatus");

--
-- Name: dead_letter_states_status_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_states_status_created_idx ON public.dead_letter_states USING btree (status, created_at, id) WHERE (status <> ALL (ARRAY['PROCESSING'::public."DeadLetterStatus", 'SUCCEEDED'::public."DeadLetterStatus"]));

--
-- Name: dead_letter_states_status_next_attempt_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_states_status_next_attempt_idx ON public.dead_letter_states USING btree (status, next_attempt_at, id) WHERE (status <> 'PROCESSING'::public."DeadLetterStatus");

--
-- Name: dead_letter_states_updated_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_states_updated_idx ON public.dead_letter_states USING btree (updated_at, id) WHERE (status <> 'PROCESSING'::public."DeadLetterStatus");

--
-- Name: dead_letter_tombstones_change_cursor_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_tombstones_change_cursor_idx ON public.dead_letter_tombstones USING btree (change_xid, change_id);

--
-- Name: dead_letter_tombstones_deleted_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letter_tombstones_deleted_idx ON public.dead_letter_tombstones USING btree (deleted_at);

--
-- Name: dead_letters_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_created_idx ON public.dead_letters USING btree (created_at, id);

--
-- Name: dead_letters_dedupe_key_key; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX dead_letters_dedupe_key_key ON public.dead_letters USING btree (dedupe_key);

--
-- Name: dead_letters_error_group_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_error_group_idx ON public.dead_letters USING btree (error_group_id, created_at);

--
-- Name: dead_letters_error_kind_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_error_kind_created_idx ON public.dead_letters USING btree (error_kind, created_at);

--
-- Name: dead_letters_error_signature_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_error_signature_idx ON public.dead_letters USING btree (error_signature, created_at);

--
-- Name: dead_letters_event_type_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_event_type_created_idx ON public.dead_letters USING btree (event_type, created_at);

--
-- Name: dead_letters_fingerprint_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_fingerprint_idx ON public.dead_letters USING btree (fingerprint, created_at) WHERE (fingerprint IS NOT NULL);

--
-- Name: dead_letters_ordering_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_ordering_idx ON public.dead_letters USING btree (ordering_key, ordering_seq, id);

--
-- Name: dead_letters_payload_gin; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_payload_gin ON public.dead_letters USING gin (payload jsonb_path_ops);

--
-- Name: dead_letters_queue_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_queue_created_idx ON public.dead_letters USING btree (queue, created_at);

--
-- Name: dead_letters_source_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_source_created_idx ON public.dead_letters USING btree (source, created_at);

--
-- Name: delivery_attempt_rollups_bucket_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_attempt_rollups_bucket_idx ON public.delivery_attempt_rollups USING btree (bucket) INCLUDE (event_type, target, outcome, latency_bucket, count);

--
-- Name: delivery_attempts_change_cursor_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_attempts_change_cursor_idx ON public.delivery_attempts USING btree (change_xid, change_id);

--
-- Name: delivery_attempts_dead_letter_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_attempts_dead_letter_idx ON public.delivery_attempts USING btree (dead_letter_id, attempt_number);

--
-- Name: error_group_actions_change_cursor_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX error_group_actions_change_cursor_idx ON public.error_group_actions USING btree (change_xid, change_id);

--
-- Name: error_group_actions_group_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX error_group_actions_group_idx ON public.error_group_actions USING btree (group_id, id);

--
-- Name: error_group_hours_bucket_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX error_group_hours_bucket_idx ON public.error_group_hours USING btree (bucket);

--
-- Name: error_groups_change_cursor_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX error_groups_change_cursor_idx ON public.error_groups USING btree (change_xid, change_id);

--
-- Name: error_groups_key_key; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX error_groups_key_key ON public.error_groups USING btree (event_type, error_kind, signature);

--
-- Name: error_groups_last_seen_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX error_groups_last_seen_idx ON public.error_groups USING btree (last_seen, id);

--
-- Name: error_groups_status_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX error_groups_status_idx ON public.error_groups USING btree (status);

--
-- Name: error_groups_total_count_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX error_groups_total_count_idx ON public.error_groups USING btree (total_count, id);

--
-- Name: error_groups_trend_count_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX error_groups_trend_count_idx ON public.error_groups USING btree (trend_count, id);

--
-- Name: error_groups_unresolved_count_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX error_groups_unresolved_count_idx ON public.error_groups USING btree (unresolved_count, id);

--
-- Name: error_groups_updated_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX error_groups_updated_at_idx ON public.error_groups USING btree (updated_at);

--
-- Name: redrive_actions_redrive_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX redrive_actions_redrive_idx ON public.redrive_actions USING btree (redrive_id, id);

--
-- Name: redrives_status_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX redrives_status_idx ON public.redrives USING btree (status);

--
-- Name: transforms_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX transforms_created_idx ON public.transforms USING btree (created_at);

--
-- Name: transforms_status_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX transforms_status_idx ON public.transforms USING btree (status);

--
-- Name: dead_letter_states tg_dead_letter_states__clear_source; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letter_states__clear_source BEFORE UPDATE ON public.dead_letter_states FOR EACH ROW WHEN (((new.deliver_to_source IS NOT NULL) AND (new.status <> ALL (ARRAY['PENDING'::public."DeadLetterStatus", 'PROCESSING'::public."DeadLetterStatus"])))) EXECUTE FUNCTION public.tg_dead_letter_states__clear_source();

--
-- Name: dead_letter_states tg_dead_letter_states__notify_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letter_states__notify_insert AFTER INSERT ON public.dead_letter_states REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.tg_lazarus__notify('dead_letters');

--
-- Name: dead_letter_states tg_dead_letter_states__stamp; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letter_states__stamp BEFORE INSERT ON public.dead_letter_states FOR EACH ROW EXECUTE FUNCTION public.tg_dead_letter_states__stamp();

--
-- Name: dead_letter_states tg_dead_letter_states__transitions; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letter_states__transitions AFTER UPDATE ON public.dead_letter_states REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letter_states__transitions();

--
-- Name: dead_letter_states tg_dead_letter_states__update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letter_states__update AFTER UPDATE ON public.dead_letter_states REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letter_states__update();

--
-- Name: dead_letter_tombstones tg_dead_letter_tombstones__notify_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letter_tombstones__notify_insert AFTER INSERT ON public.dead_letter_tombstones REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.tg_lazarus__notify();

--
-- Name: dead_letters tg_dead_letters__delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__delete AFTER DELETE ON public.dead_letters REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__delete();

--
-- Name: dead_letters tg_dead_letters__derive_signature; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__derive_signature BEFORE INSERT OR UPDATE OF error_message, error_signature ON public.dead_letters FOR EACH ROW EXECUTE FUNCTION public.tg_dead_letters__derive_signature();

--
-- Name: dead_letters tg_dead_letters__error_group_id; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__error_group_id BEFORE INSERT OR UPDATE OF event_type, error_kind, fingerprint, error_message, error_stack, error_group_id ON public.dead_letters FOR EACH ROW EXECUTE FUNCTION public.tg_dead_letters__error_group_id();

--
-- Name: dead_letters tg_dead_letters__error_groups_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__error_groups_insert AFTER INSERT ON public.dead_letters REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__error_groups_insert();

--
-- Name: dead_letters tg_dead_letters__error_groups_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__error_groups_truncate AFTER TRUNCATE ON public.dead_letters FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__error_groups_truncate();

--
-- Name: dead_letters tg_dead_letters__error_texts_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__error_texts_delete AFTER DELETE ON public.dead_letters REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__error_texts_delete();

--
-- Name: dead_letters tg_dead_letters__error_texts_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__error_texts_insert AFTER INSERT ON public.dead_letters REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__error_texts_insert();

--
-- Name: dead_letters tg_dead_letters__error_texts_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__error_texts_truncate AFTER TRUNCATE ON public.dead_letters FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__error_texts_truncate();

--
-- Name: dead_letters tg_dead_letters__error_texts_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__error_texts_update AFTER UPDATE OF error_message, error_stack ON public.dead_letters FOR EACH ROW WHEN (((old.error_message IS DISTINCT FROM new.error_message) OR (old.error_stack IS DISTINCT FROM new.error_stack))) EXECUTE FUNCTION public.tg_dead_letters__error_texts_update();

--
-- Name: dead_letters tg_dead_letters__inputs_fixed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__inputs_fixed BEFORE UPDATE OF status, attempts, next_attempt_at, lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason ON public.dead_letters FOR EACH ROW WHEN (((new.status IS NOT NULL) OR (new.attempts IS NOT NULL) OR (new.next_attempt_at IS NOT NULL) OR (new.lease_owner IS NOT NULL) OR (new.lease_token IS NOT NULL) OR (new.lease_expires_at IS NOT NULL) OR (new.resolved_at IS NOT NULL) OR (new.resolved_by IS NOT NULL) OR (new.resolution_reason IS NOT NULL))) EXECUTE FUNCTION public.tg_dead_letters__inputs_fixed();

--
-- Name: dead_letters tg_dead_letters__origin_fixed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__origin_fixed BEFORE UPDATE OF origin ON public.dead_letters FOR EACH ROW WHEN ((old.origin IS DISTINCT FROM new.origin)) EXECUTE FUNCTION public.tg_dead_letters__origin_fixed();

--
-- Name: dead_letters tg_dead_letters__recorded; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__recorded AFTER INSERT ON public.dead_letters REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__recorded();

--
-- Name: dead_letters tg_dead_letters__rollup_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__rollup_insert AFTER INSERT ON public.dead_letters REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__rollup_insert();

--
-- Name: dead_letters tg_dead_letters__rollup_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__rollup_truncate AFTER TRUNCATE ON public.dead_letters FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__rollup_truncate();

--
-- Name: dead_letters tg_dead_letters__signature_rollup_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__signature_rollup_update AFTER UPDATE OF error_message, event_type, queue, error_kind, created_at ON public.dead_letters FOR EACH ROW WHEN ((((((public.lazarus_rollup_bucket(old.created_at) IS DISTINCT FROM public.lazarus_rollup_bucket(new.created_at)) OR (old.error_signature IS DISTINCT FROM new.error_signature)) OR (old.event_type IS DISTINCT FROM new.event_type)) OR (old.queue IS DISTINCT FROM new.queue)) OR (old.error_kind IS DISTINCT FROM new.error_kind))) EXECUTE FUNCTION public.tg_dead_letters__signature_rollup_update();

--
-- Name: dead_letters tg_dead_letters__state_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__state_insert AFTER INSERT ON public.dead_letters REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__state_insert();

--
-- Name: dead_letters tg_dead_letters__state_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__state_truncate AFTER TRUNCATE ON public.dead_letters FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__state_truncate();

--
-- Name: dead_letters tg_dead_letters__update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters__update AFTER UPDATE ON public.dead_letters REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_dead_letters__update();

--
-- Name: dead_letters_current tg_dead_letters_current__write; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_dead_letters_current__write INSTEAD OF INSERT OR DELETE OR UPDATE ON public.dead_letters_current FOR EACH ROW EXECUTE FUNCTION public.tg_dead_letters_current__write();

--
-- Name: delivery_attempts tg_delivery_attempts__notify_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_delivery_attempts__notify_insert AFTER INSERT ON public.delivery_attempts REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.tg_lazarus__notify();

--
-- Name: delivery_attempts tg_delivery_attempts__rollup_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_delivery_attempts__rollup_insert AFTER INSERT ON public.delivery_attempts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.tg_delivery_attempts__rollup_insert();

--
-- Name: delivery_attempts tg_delivery_attempts__rollup_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_delivery_attempts__rollup_truncate AFTER TRUNCATE ON public.delivery_attempts FOR EACH STATEMENT EXECUTE FUNCTION public.tg_delivery_attempts__rollup_truncate();

--
-- Name: delivery_attempts tg_delivery_attempts__stamp; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_delivery_attempts__stamp BEFORE INSERT ON public.delivery_attempts FOR EACH ROW EXECUTE FUNCTION public.tg_delivery_attempts__stamp();

--
-- Name: error_groups tg_error_groups__hint_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_error_groups__hint_insert AFTER INSERT ON public.error_groups REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.tg_error_groups__hint();

--
-- Name: error_groups tg_error_groups__hint_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_error_groups__hint_update AFTER UPDATE ON public.error_groups REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.tg_error_groups__hint();

--
-- Name: error_groups tg_error_groups__stamp_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_error_groups__stamp_insert BEFORE INSERT ON public.error_groups FOR EACH ROW EXECUTE FUNCTION public.tg_error_groups__stamp();

--
-- Name: error_groups tg_error_groups__stamp_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_error_groups__stamp_update BEFORE UPDATE ON public.error_groups FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) OR (old.total_count IS DISTINCT FROM new.total_count) OR (old.unresolved_count IS DISTINCT FROM new.unresolved_count))) EXECUTE FUNCTION public.tg_error_groups__stamp();

--
-- Name: retry_policies tg_retry_policies__webhook_columns; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tg_retry_policies__webhook_columns BEFORE INSERT OR UPDATE ON public.retry_policies FOR EACH ROW EXECUTE FUNCTION public.tg_retry_policies__webhook_columns();

--
-- Name: alert_rule_windows alert_rule_windows_rule_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alert_rule_windows
    ADD CONSTRAINT alert_rule_windows_rule_id_fkey FOREIGN KEY (rule_id) REFERENCES public.alert_rules(id) ON UPDATE CASCADE ON DELETE CASCADE;

--
-- Name: alert_throttles alert_throttles_rule_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alert_throttles
    ADD CONSTRAINT alert_throttles_rule_id_fkey FOREIGN KEY (rule_id) REFERENCES public.alert_rules(id) ON UPDATE CASCADE ON DELETE CASCADE;

--
-- Name: alerts alerts_digest_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alerts
    ADD CONSTRAINT alerts_digest_id_fkey FOREIGN KEY (digest_id) REFERENCES public.alerts(id) ON UPDATE CASCADE ON DELETE SET NULL;

--
-- Name: alerts alerts_rule_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alerts
    ADD CONSTRAINT alerts_rule_id_fkey FOREIGN KEY (rule_id) REFERENCES public.alert_rules(id) ON UPDATE CASCADE ON DELETE SET NULL;

--
-- Name: error_group_actions error_group_actions_group_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.error_group_actions
    ADD CONSTRAINT error_group_actions_group_id_fkey FOREIGN KEY (group_id) REFERENCES public.error_groups(id) ON UPDATE CASCADE ON DELETE CASCADE;

--
-- Name: error_group_hours error_group_hours_group_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.error_group_hours
    ADD CONSTRAINT error_group_hours_group_id_fkey FOREIGN KEY (group_id) REFERENCES public.error_groups(id) ON UPDATE CASCADE ON DELETE CASCADE;

--
-- Name: redrive_actions redrive_actions_redrive_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.redrive_actions
    ADD CONSTRAINT redrive_actions_redrive_id_fkey FOREIGN KEY (redrive_id) REFERENCES public.redrives(id) ON UPDATE CASCADE ON DELETE CASCADE;

--
-- Name: redrive_items redrive_items_redrive_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.redrive_items
    ADD CONSTRAINT redrive_items_redrive_id_fkey FOREIGN KEY (redrive_id) REFERENCES public.redrives(id) ON UPDATE CASCADE ON DELETE CASCADE;

--
-- Name: transform_items transform_items_transform_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transform_items
    ADD CONSTRAINT transform_items_transform_id_fkey FOREIGN KEY (transform_id) REFERENCES public.transforms(id) ON UPDATE CASCADE ON DELETE CASCADE;

--
-- PostgreSQL database dump complete
--
