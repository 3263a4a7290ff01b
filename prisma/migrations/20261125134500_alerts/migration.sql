-- Outbound alerts (issue 19 item 5): admin-configured rules, a throttle per rule and subject, and
-- the alerts themselves, which are also the delivery outbox.
--
-- An alert is raised by lazarus_raise_alert() below, in the raiser's own transaction: the error
-- group triggers (NEW_GROUP, REGRESSION) call it from the database, so plain SQL producers are
-- covered; the redrive guard (REDRIVE_PAUSED) and the metric evaluator call it through
-- src/db/sql/raiseAlert.ts. A raise that rolls back leaves nothing, not even its throttle mark.
--
-- Throttle: at most one alert per rule and subject ('group:<id>', 'redrive:<id>' or 'global') per
-- rule window, a sliding window kept as one row per (rule, subject) with the last raise. The raise
-- first reads that row without locking (inside the window — the common case in a storm — it
-- returns at once and takes no lock); otherwise it upserts the row conditioned on the window. Two
-- transactions racing for the same rule and subject queue on that row: the second re-checks the
-- condition against the first one's committed time and raises nothing, so several service
-- instances (or producers) never raise twice. The row lock is held until the raiser commits, so a
-- raiser should raise near the end of its transaction.
--
-- Delivery: alerts rows with delivery_status PENDING are claimed FOR UPDATE SKIP LOCKED with a
-- lease, like the retry loop's claims; a crashed deliverer's lease expires and another claims the
-- alert again. A raise NOTIFYs 'lazarus_alerts' (delivered at commit, coalesced per transaction) so
-- a deliverer wakes at once; the channel carries no data and deliverers also poll.

CREATE TYPE "AlertTrigger" AS ENUM ('NEW_GROUP', 'REGRESSION', 'EXHAUSTED_RATE', 'OLDEST_PENDING_AGE', 'BACKLOG', 'REDRIVE_PAUSED');
CREATE TYPE "AlertFormat" AS ENUM ('STANDARD', 'SLACK');
CREATE TYPE "AlertDeliveryStatus" AS ENUM ('PENDING', 'DELIVERING', 'DELIVERED', 'FAILED');

-- A threshold exactly when the trigger is a metric; the rest mirrors the checks in
-- src/domain/alertRules.ts, so a row written by SQL is one every path can serve.
CREATE TABLE "alert_rules" (
    "id" BIGSERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "trigger" "AlertTrigger" NOT NULL,
    "threshold" INTEGER,
    "window_seconds" INTEGER NOT NULL DEFAULT 900,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "target_url" TEXT NOT NULL,
    "format" "AlertFormat" NOT NULL DEFAULT 'STANDARD',
    "signing_secret" TEXT NOT NULL,
    "allow_private_target" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_by" TEXT,
    CONSTRAINT "alert_rules_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "alert_rules_name_check" CHECK (length("name") BETWEEN 1 AND 200),
    CONSTRAINT "alert_rules_threshold_check" CHECK (
      ("trigger" IN ('EXHAUSTED_RATE', 'OLDEST_PENDING_AGE', 'BACKLOG')) = ("threshold" IS NOT NULL) AND coalesce("threshold", 0) >= 0),
    CONSTRAINT "alert_rules_window_check" CHECK ("window_seconds" BETWEEN 1 AND 2592000),
    CONSTRAINT "alert_rules_target_check" CHECK ("target_url" ~ '^https?://' AND length("target_url") <= 2000),
    CONSTRAINT "alert_rules_secret_check" CHECK (length("signing_secret") BETWEEN 16 AND 500)
);
CREATE UNIQUE INDEX "alert_rules_name_key" ON "alert_rules" ("name");
CREATE INDEX "alert_rules_trigger_idx" ON "alert_rules" ("trigger");

CREATE TABLE "alert_throttles" (
    "rule_id" BIGINT NOT NULL,
    "subject" TEXT NOT NULL,
    "last_raised_at" TIMESTAMPTZ(6) NOT NULL,
    CONSTRAINT "alert_throttles_pkey" PRIMARY KEY ("rule_id", "subject")
);
ALTER TABLE "alert_throttles" ADD CONSTRAINT "alert_throttles_rule_id_fkey"
  FOREIGN KEY ("rule_id") REFERENCES "alert_rules"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- rule_name is copied so the history still names a deleted rule (rule_id becomes null; a PENDING
-- alert of a deleted rule ends FAILED at its next claim).
CREATE TABLE "alerts" (
    "id" BIGSERIAL NOT NULL,
    "rule_id" BIGINT,
    "rule_name" TEXT NOT NULL,
    "trigger" "AlertTrigger" NOT NULL,
    "subject" TEXT NOT NULL,
    "summary" TEXT NOT NULL,
    "details" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivery_status" "AlertDeliveryStatus" NOT NULL DEFAULT 'PENDING',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lease_owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(6),
    "last_error" TEXT,
    "last_status_code" INTEGER,
    "delivered_at" TIMESTAMPTZ(6),
    CONSTRAINT "alerts_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "alerts_lease_check" CHECK (("delivery_status" = 'DELIVERING') = ("lease_owner" IS NOT NULL AND "lease_expires_at" IS NOT NULL)),
    CONSTRAINT "alerts_delivered_check" CHECK (("delivery_status" = 'DELIVERED') = ("delivered_at" IS NOT NULL))
);
ALTER TABLE "alerts" ADD CONSTRAINT "alerts_rule_id_fkey"
  FOREIGN KEY ("rule_id") REFERENCES "alert_rules"("id") ON DELETE SET NULL ON UPDATE CASCADE;
CREATE INDEX "alerts_due_idx" ON "alerts" ("next_attempt_at", "id") WHERE "delivery_status" = 'PENDING';
CREATE INDEX "alerts_lease_idx" ON "alerts" ("lease_expires_at") WHERE "delivery_status" = 'DELIVERING';
CREATE INDEX "alerts_rule_idx" ON "alerts" ("rule_id", "id");

-- Raises `trigger` for `subject` on every enabled rule of that trigger (or only rule `only_rule`),
-- each at most once per its window; returns the ids of the alerts raised. It never fails its
-- caller over an alert's size: the summary is cut to 2,000 characters and details that are not a
-- JSON object are wrapped as {"value": …}.
CREATE FUNCTION "lazarus_raise_alert"(
    p_trigger "AlertTrigger", p_subject TEXT, p_summary TEXT, p_details JSONB DEFAULT '{}', p_only_rule BIGINT DEFAULT NULL)
  RETURNS SETOF BIGINT LANGUAGE plpgsql AS $$
DECLARE
  r RECORD;
  raised BIGINT;
  any_raised BOOLEAN := false;
BEGIN
  FOR r IN SELECT id, name, window_seconds FROM alert_rules
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
    INSERT INTO alerts (rule_id, rule_name, "trigger", subject, summary, details)
      VALUES (r.id, r.name, p_trigger, p_subject, left(coalesce(nullif(p_summary, ''), p_trigger::text), 2000),
              CASE WHEN jsonb_typeof(p_details) = 'object' THEN p_details
                   WHEN p_details IS NULL THEN '{}'::jsonb
                   ELSE jsonb_build_object('value', p_details) END)
      RETURNING id INTO raised;
    any_raised := true;
    RETURN NEXT raised;
  END LOOP;
  IF any_raised AND pg_notification_queue_usage() <= 0.5 THEN
    PERFORM pg_notify('lazarus_alerts', '');
  END IF;
END;
$$;
