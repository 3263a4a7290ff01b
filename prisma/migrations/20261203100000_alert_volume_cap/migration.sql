-- A volume cap per alert rule (issue 32 item 7): one INSERT of 500 distinct errors made 500 new
-- error groups and sent 500 webhooks in 15 s. The per-subject throttle cannot help there, every
-- subject being new; a rule now raises at most `max_alerts_per_window` alerts per
-- `cap_window_seconds` (default 10 per 5 minutes), whatever their subjects.
--
-- Past the cap, an alert is still recorded (nothing is lost: the alerts query shows it) but with
-- delivery_status SUPPRESSED, never delivered, and folded into the window's one digest alert:
-- subject 'digest', the rule's trigger, details { digest, suppressed, first: [{subject, summary}…5],
-- windowStartedAt, windowEndsAt }, and a summary that says how many were held back and names the
-- first subjects. Each suppressed row points at its digest (digest_id).
--
-- The digest is due when the window closes, not at once: the first alerts of the window already
-- went out one by one, so on-call knows; the digest then tells the whole count once, instead of a
-- count that is stale the moment it is sent (or a second digest per window). A digest that was
-- already claimed (a raiser whose transaction began before the window closed and committed after)
-- is not changed: a new digest, due at once, takes the late alerts.
--
-- The window is fixed, opened by the rule's first alert after the last window ended, and kept in
-- alert_rule_windows (one row per rule). The raise upserts that row, so two raisers of one rule
-- queue on it until the first commits, as they do on a throttle row; the count is then exact
-- across instances.

ALTER TYPE "AlertDeliveryStatus" ADD VALUE 'SUPPRESSED';

ALTER TABLE "alert_rules"
  ADD COLUMN "max_alerts_per_window" INTEGER NOT NULL DEFAULT 10,
  ADD COLUMN "cap_window_seconds" INTEGER NOT NULL DEFAULT 300,
  ADD CONSTRAINT "alert_rules_cap_check" CHECK ("max_alerts_per_window" BETWEEN 1 AND 100000),
  ADD CONSTRAINT "alert_rules_cap_window_check" CHECK ("cap_window_seconds" BETWEEN 1 AND 2592000);

ALTER TABLE "alerts" ADD COLUMN "digest_id" BIGINT;
ALTER TABLE "alerts" ADD CONSTRAINT "alerts_digest_id_fkey"
  FOREIGN KEY ("digest_id") REFERENCES "alerts"("id") ON DELETE SET NULL ON UPDATE CASCADE;
CREATE INDEX "alerts_digest_idx" ON "alerts" ("digest_id");

CREATE TABLE "alert_rule_windows" (
    "rule_id" BIGINT NOT NULL,
    "started_at" TIMESTAMPTZ(6) NOT NULL,
    "raised" INTEGER NOT NULL,
    "digest_id" BIGINT,
    CONSTRAINT "alert_rule_windows_pkey" PRIMARY KEY ("rule_id")
);
ALTER TABLE "alert_rule_windows" ADD CONSTRAINT "alert_rule_windows_rule_id_fkey"
  FOREIGN KEY ("rule_id") REFERENCES "alert_rules"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The digest's one line: how many, by which rule's cap, and the first subjects.
CREATE FUNCTION "lazarus_alert_digest_summary"(p_rule_name TEXT, p_trigger "AlertTrigger", p_cap INTEGER, p_window_seconds INTEGER, p_details JSONB)
  RETURNS TEXT LANGUAGE sql STABLE AS $$
  SELECT left(format('%s more %s alerts suppressed by rule "%s" (at most %s per %s s); first: %s%s',
                     p_details->>'suppressed', p_trigger, p_rule_name, p_cap, p_window_seconds,
                     (SELECT string_agg(f->>'subject', ', ') FROM jsonb_array_elements(p_details->'first') f),
                     CASE WHEN (p_details->>'suppressed')::int > jsonb_array_length(p_details->'first') THEN ', …' ELSE '' END), 2000);
$$;

-- As in 20261125134500_alerts, plus the cap: the throttle first (a throttled raise records
-- nothing, as before), then the rule's window; past its cap the alert is recorded SUPPRESSED and
-- folded into the window's digest.
CREATE OR REPLACE FUNCTION "lazarus_raise_alert"(
    p_trigger "AlertTrigger", p_subject TEXT, p_summary TEXT, p_details JSONB DEFAULT '{}', p_only_rule BIGINT DEFAULT NULL)
  RETURNS SETOF BIGINT LANGUAGE plpgsql AS $$
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
