-- Ramped, self-pausing redrives (issue 19 item 4).
--
-- A redrive's rate ramps linearly from start_rate_per_second to rate_per_second (the maximum) over
-- ramp_seconds, counted from ramp_started_at (set when it starts and again on every resume, so a
-- resumed redrive ramps up again). start_rate_per_second null means "start at the maximum".
--
-- The guard: with pause_when_failure_rate_above set, before each batch the runner reads the last
-- window_size delivery outcomes of this redrive's items (delivery_attempts with id above
-- guard_after_attempt_id, so a resume starts a fresh window) and pauses the redrive itself when the
-- share of failures is above the threshold. paused_by says who paused it (GUARD or OPERATOR) and
-- paused_reason why; both are set exactly while the redrive is PAUSED.
CREATE TYPE "RedrivePausedBy" AS ENUM ('GUARD', 'OPERATOR');

ALTER TABLE "redrives"
  ADD COLUMN "start_rate_per_second" INTEGER,
  ADD COLUMN "ramp_seconds" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN "ramp_started_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  ADD COLUMN "pause_when_failure_rate_above" DOUBLE PRECISION,
  ADD COLUMN "window_size" INTEGER NOT NULL DEFAULT 100,
  ADD COLUMN "guard_after_attempt_id" BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN "paused_by" "RedrivePausedBy",
  ADD COLUMN "paused_reason" TEXT;

-- Redrives paused before this migration were paused by an operator.
UPDATE "redrives" SET "paused_by" = 'OPERATOR' WHERE "status" = 'PAUSED';

-- The same ranges the API checks (rate_per_second has its CHECK since the init migration), so a plain
-- SQL UPDATE cannot leave a redrive the runner would misread.
ALTER TABLE "redrives"
  ADD CONSTRAINT "redrives_start_rate_check" CHECK ("start_rate_per_second" IS NULL OR "start_rate_per_second" BETWEEN 1 AND "rate_per_second"),
  ADD CONSTRAINT "redrives_ramp_seconds_check" CHECK ("ramp_seconds" BETWEEN 0 AND 604800),
  ADD CONSTRAINT "redrives_guard_check" CHECK ("pause_when_failure_rate_above" IS NULL OR "pause_when_failure_rate_above" BETWEEN 0 AND 1),
  ADD CONSTRAINT "redrives_window_size_check" CHECK ("window_size" BETWEEN 1 AND 10000),
  ADD CONSTRAINT "redrives_paused_check" CHECK (("status" = 'PAUSED') = ("paused_by" IS NOT NULL));

-- History of a redrive's own changes (start, pause by operator or guard, resume with its limits
-- before/after, cancel, failure, completion), written by the statement that makes the change.
CREATE TYPE "RedriveActionKind" AS ENUM ('STARTED', 'PAUSED', 'RESUMED', 'CANCELLED', 'FAILED', 'COMPLETED');

CREATE TABLE "redrive_actions" (
    "id" BIGSERIAL NOT NULL,
    "redrive_id" BIGINT NOT NULL,
    "action" "RedriveActionKind" NOT NULL,
    "actor" TEXT NOT NULL,
    "reason" TEXT,
    "before" JSONB,
    "after" JSONB,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "redrive_actions_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "redrive_actions_redrive_idx" ON "redrive_actions"("redrive_id", "id");

ALTER TABLE "redrive_actions" ADD CONSTRAINT "redrive_actions_redrive_id_fkey" FOREIGN KEY ("redrive_id") REFERENCES "redrives"("id") ON DELETE CASCADE ON UPDATE CASCADE;
