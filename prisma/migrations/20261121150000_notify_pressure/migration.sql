-- Notify pressure, made testable. The NOTIFY trigger skips its hint when the notification queue
-- is over half full (a listener stuck in a transaction), so writers' COMMITs never fail on a full
-- queue. PostgreSQL 15's queue is 8 GB, so tests cannot fill it; instead a session may make the
-- trigger MORE careful, never less:
--  - lazarus.notify_queue_usage_override (0..1) raises the usage the trigger sees (the real
--    pg_notification_queue_usage() still counts: the larger of the two wins);
--  - lazarus.notify_queue_threshold (0..0.5) lowers the threshold (never above 0.5).
-- A value that is not a plain decimal is ignored (never an error: an INSERT must not fail here).
-- Skipping a hint costs latency only: listeners re-read rows by cursor on their fallback timer.

CREATE FUNCTION "lazarus_setting_fraction"(name TEXT) RETURNS DOUBLE PRECISION LANGUAGE plpgsql STABLE AS $$
DECLARE
  raw TEXT := current_setting(name, true);
BEGIN
  IF raw IS NULL OR raw !~ '^\s*(0|1)?(\.[0-9]{1,15})?\s*$' OR btrim(raw) IN ('', '.') THEN
    RETURN NULL;
  END IF;
  RETURN least(1.0, btrim(raw)::double precision);
END;
$$;

CREATE FUNCTION "lazarus_notify_queue_usage"() RETURNS DOUBLE PRECISION LANGUAGE sql STABLE AS $$
  SELECT greatest(pg_notification_queue_usage(), coalesce(lazarus_setting_fraction('lazarus.notify_queue_usage_override'), 0));
$$;

CREATE FUNCTION "lazarus_notify_queue_threshold"() RETURNS DOUBLE PRECISION LANGUAGE sql STABLE AS $$
  SELECT least(0.5, coalesce(lazarus_setting_fraction('lazarus.notify_queue_threshold'), 0.5));
$$;

CREATE OR REPLACE FUNCTION "tg_lazarus__notify"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  hint jsonb;
BEGIN
  IF lazarus_notify_queue_usage() > lazarus_notify_queue_threshold() THEN
    RETURN NULL;
  END IF;
  SELECT jsonb_build_object(
           't', TG_TABLE_NAME,
           'op', lower(TG_OP),
           'n', count(*),
           'max', max(change_id),
           'ids', (SELECT coalesce(jsonb_agg(id), '[]'::jsonb) FROM (SELECT id FROM changed LIMIT 50) firsts))
    INTO hint
    FROM changed
  HAVING count(*) > 0;
  IF hint IS NOT NULL THEN
    PERFORM pg_notify('lazarus_changes', hint::text);
  END IF;
  RETURN NULL;
END;
$$;
