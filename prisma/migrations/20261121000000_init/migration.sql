-- Lazarus initial schema: the tables of prisma/schema.prisma, plus what Prisma cannot model.

-- Trigram search over error messages needs pg_trgm (a contrib extension shipped with PostgreSQL).
CREATE EXTENSION IF NOT EXISTS "pg_trgm";

-- CreateEnum
CREATE TYPE "DeadLetterStatus" AS ENUM ('PENDING', 'PROCESSING', 'SUCCEEDED', 'EXHAUSTED', 'RESOLVED', 'DISCARDED');

-- CreateEnum
CREATE TYPE "ErrorKind" AS ENUM ('DOWNSTREAM_API', 'TIMEOUT', 'VALIDATION', 'SCHEMA_MISMATCH', 'CRASH', 'UNKNOWN');

-- CreateEnum
CREATE TYPE "AttemptOutcome" AS ENUM ('SUCCEEDED', 'FAILED', 'PERMANENT_FAILURE', 'TIMED_OUT', 'LEASE_LOST');

-- CreateEnum
CREATE TYPE "ActionKind" AS ENUM ('RECORDED', 'REQUEUED', 'RESOLVED', 'DISCARDED', 'DELETED', 'PAYLOAD_EDITED', 'NOTE_ADDED', 'PAUSED', 'RESUMED');

-- CreateEnum
CREATE TYPE "BackoffKind" AS ENUM ('EXPONENTIAL', 'LINEAR', 'FIXED');

-- CreateEnum
CREATE TYPE "RedriveStatus" AS ENUM ('RUNNING', 'PAUSED', 'CANCELLED', 'COMPLETED', 'FAILED');

-- One global sequence orders changes across dead_letters and delivery_attempts. A sequence value
-- alone is not commit order (a transaction can take a value and commit after a later one), so
-- every row also records its transaction's xid8; readers only trust rows whose xid is below the
-- snapshot's xmin (see src/notify/).
CREATE SEQUENCE "lazarus_change_seq" AS BIGINT;

-- CreateTable
CREATE TABLE "dead_letters" (
    "id" BIGSERIAL NOT NULL,
    "event_type" TEXT NOT NULL,
    "queue" TEXT NOT NULL DEFAULT 'default',
    "source" TEXT NOT NULL DEFAULT 'unknown',
    "ordering_key" TEXT,
    "ordering_seq" BIGINT,
    "dedupe_key" TEXT,
    "payload" JSONB NOT NULL DEFAULT '{}',
    "headers" JSONB NOT NULL DEFAULT '{}',
    "error_kind" "ErrorKind" NOT NULL DEFAULT 'UNKNOWN',
    "error_message" TEXT NOT NULL DEFAULT '',
    "error_stack" TEXT,
    "status" "DeadLetterStatus" NOT NULL DEFAULT 'PENDING',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "max_attempts" INTEGER,
    "next_attempt_at" TIMESTAMPTZ(6) DEFAULT CURRENT_TIMESTAMP,
    "lease_owner" TEXT,
    "lease_token" UUID,
    "lease_expires_at" TIMESTAMPTZ(6),
    "resolved_at" TIMESTAMPTZ(6),
    "resolved_by" TEXT,
    "resolution_reason" TEXT,
    "occurred_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "version" INTEGER NOT NULL DEFAULT 0,
    "change_id" BIGINT NOT NULL DEFAULT nextval('lazarus_change_seq'::regclass),
    "change_xid" xid8 NOT NULL DEFAULT pg_current_xact_id(),

    CONSTRAINT "dead_letters_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "delivery_attempts" (
    "id" BIGSERIAL NOT NULL,
    "dead_letter_id" BIGINT NOT NULL,
    "attempt_number" INTEGER NOT NULL,
    "worker_id" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "duration_ms" INTEGER NOT NULL,
    "outcome" "AttemptOutcome" NOT NULL,
    "status_code" INTEGER,
    "error_message" TEXT,
    "response_body" TEXT,
    "change_id" BIGINT NOT NULL DEFAULT nextval('lazarus_change_seq'::regclass),
    "change_xid" xid8 NOT NULL DEFAULT pg_current_xact_id(),

    CONSTRAINT "delivery_attempts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "dead_letter_actions" (
    "id" BIGSERIAL NOT NULL,
    "dead_letter_id" BIGINT NOT NULL,
    "action" "ActionKind" NOT NULL,
    "actor" TEXT NOT NULL,
    "reason" TEXT,
    "before" JSONB,
    "after" JSONB,
    "redrive_id" BIGINT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "dead_letter_actions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "retry_policies" (
    "event_type" TEXT NOT NULL,
    "max_attempts" INTEGER NOT NULL DEFAULT 10,
    "backoff" "BackoffKind" NOT NULL DEFAULT 'EXPONENTIAL',
    "base_delay_ms" INTEGER NOT NULL DEFAULT 1000,
    "max_delay_ms" INTEGER NOT NULL DEFAULT 3600000,
    "timeout_ms" INTEGER NOT NULL DEFAULT 10000,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "ordered" BOOLEAN NOT NULL DEFAULT false,
    "concurrency" INTEGER,
    "target_url" TEXT,
    "allow_private_target" BOOLEAN NOT NULL DEFAULT false,
    "signing_secret" TEXT,
    "permanent_status_codes" INTEGER[] DEFAULT ARRAY[400, 401, 403, 404, 405, 410, 413, 415, 422]::INTEGER[],
    "permanent_error_kinds" "ErrorKind"[] DEFAULT ARRAY[]::"ErrorKind"[],
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_by" TEXT,

    CONSTRAINT "retry_policies_pkey" PRIMARY KEY ("event_type")
);

-- CreateTable
CREATE TABLE "redrives" (
    "id" BIGSERIAL NOT NULL,
    "status" "RedriveStatus" NOT NULL DEFAULT 'RUNNING',
    "filter" JSONB NOT NULL,
    "rate_per_second" INTEGER NOT NULL,
    "reset_attempts" BOOLEAN NOT NULL DEFAULT false,
    "total" INTEGER NOT NULL DEFAULT 0,
    "processed" INTEGER NOT NULL DEFAULT 0,
    "requeued" INTEGER NOT NULL DEFAULT 0,
    "skipped" INTEGER NOT NULL DEFAULT 0,
    "last_id" BIGINT NOT NULL DEFAULT 0,
    "created_by" TEXT NOT NULL,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(6),

    CONSTRAINT "redrives_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "dead_letters_dedupe_key_key" ON "dead_letters"("dedupe_key");

-- CreateIndex
CREATE INDEX "dead_letters_status_next_attempt_idx" ON "dead_letters"("status", "next_attempt_at", "id");

-- CreateIndex
CREATE INDEX "dead_letters_created_idx" ON "dead_letters"("created_at", "id");

-- CreateIndex
CREATE INDEX "dead_letters_updated_idx" ON "dead_letters"("updated_at", "id");

-- CreateIndex
CREATE INDEX "dead_letters_event_type_created_idx" ON "dead_letters"("event_type", "created_at");

-- CreateIndex
CREATE INDEX "dead_letters_queue_created_idx" ON "dead_letters"("queue", "created_at");

-- CreateIndex
CREATE INDEX "dead_letters_source_created_idx" ON "dead_letters"("source", "created_at");

-- CreateIndex
CREATE INDEX "dead_letters_error_kind_created_idx" ON "dead_letters"("error_kind", "created_at");

-- CreateIndex
CREATE INDEX "dead_letters_ordering_idx" ON "dead_letters"("ordering_key", "ordering_seq", "id");

-- CreateIndex
CREATE INDEX "dead_letters_payload_gin" ON "dead_letters" USING GIN ("payload" jsonb_path_ops);

-- CreateIndex
CREATE INDEX "dead_letters_error_message_trgm" ON "dead_letters" USING GIN ("error_message" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "delivery_attempts_dead_letter_idx" ON "delivery_attempts"("dead_letter_id", "attempt_number");

-- CreateIndex
CREATE INDEX "delivery_attempts_finished_idx" ON "delivery_attempts"("finished_at");

-- CreateIndex
CREATE INDEX "dead_letter_actions_dead_letter_idx" ON "dead_letter_actions"("dead_letter_id", "id");

-- CreateIndex
CREATE INDEX "dead_letter_actions_created_idx" ON "dead_letter_actions"("created_at");

-- CreateIndex
CREATE INDEX "redrives_status_idx" ON "redrives"("status");

-- AddForeignKey
ALTER TABLE "delivery_attempts" ADD CONSTRAINT "delivery_attempts_dead_letter_id_fkey" FOREIGN KEY ("dead_letter_id") REFERENCES "dead_letters"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- ---------------------------------------------------------------------------------------------
-- Below: what Prisma cannot model.
-- ---------------------------------------------------------------------------------------------

-- Change-feed reads walk (change_xid, change_id) from a cursor; the retry loop's claim scans due
-- rows and expired leases. Both are partial/opclass-specific shapes Prisma cannot declare.
CREATE INDEX "dead_letters_change_cursor_idx" ON "dead_letters" ("change_xid", "change_id");
CREATE INDEX "delivery_attempts_change_cursor_idx" ON "delivery_attempts" ("change_xid", "change_id");
CREATE INDEX "dead_letters_due_idx" ON "dead_letters" ("next_attempt_at", "id") WHERE "status" = 'PENDING';
CREATE INDEX "dead_letters_lease_idx" ON "dead_letters" ("lease_expires_at") WHERE "status" = 'PROCESSING';

-- Error-text search covers message and stack by word; the trigram index above covers substrings of
-- the message.
CREATE INDEX "dead_letters_error_fts" ON "dead_letters"
  USING GIN (to_tsvector('simple'::regconfig, "error_message" || ' ' || coalesce("error_stack", '')));

-- Status and timestamps must agree, so a plain SQL UPDATE cannot leave a row in a shape the
-- service would misread:
--  * PENDING rows are due at some time; PROCESSING rows hold a complete lease and nobody else does;
--  * terminal rows (SUCCEEDED, RESOLVED, DISCARDED) record when they ended (the trigger fills it).
ALTER TABLE "dead_letters"
  ADD CONSTRAINT "dead_letters_event_type_check" CHECK (length("event_type") BETWEEN 1 AND 200),
  ADD CONSTRAINT "dead_letters_queue_check" CHECK (length("queue") BETWEEN 1 AND 200),
  ADD CONSTRAINT "dead_letters_source_check" CHECK (length("source") BETWEEN 1 AND 200),
  ADD CONSTRAINT "dead_letters_ordering_key_check" CHECK ("ordering_key" IS NULL OR length("ordering_key") BETWEEN 1 AND 500),
  ADD CONSTRAINT "dead_letters_dedupe_key_check" CHECK ("dedupe_key" IS NULL OR length("dedupe_key") BETWEEN 1 AND 500),
  ADD CONSTRAINT "dead_letters_payload_size_check" CHECK (octet_length("payload"::text) <= 262144),
  ADD CONSTRAINT "dead_letters_headers_size_check" CHECK (jsonb_typeof("headers") = 'object' AND octet_length("headers"::text) <= 65536),
  ADD CONSTRAINT "dead_letters_attempts_check" CHECK ("attempts" >= 0),
  ADD CONSTRAINT "dead_letters_max_attempts_check" CHECK ("max_attempts" IS NULL OR "max_attempts" BETWEEN 1 AND 1000),
  ADD CONSTRAINT "dead_letters_pending_due_check" CHECK ("status" <> 'PENDING' OR "next_attempt_at" IS NOT NULL),
  ADD CONSTRAINT "dead_letters_lease_check" CHECK (
    ("status" = 'PROCESSING') = ("lease_owner" IS NOT NULL AND "lease_token" IS NOT NULL AND "lease_expires_at" IS NOT NULL)
    AND ("status" = 'PROCESSING' OR ("lease_owner" IS NULL AND "lease_token" IS NULL AND "lease_expires_at" IS NULL))),
  ADD CONSTRAINT "dead_letters_resolved_check" CHECK (
    ("status" IN ('SUCCEEDED', 'RESOLVED', 'DISCARDED')) = ("resolved_at" IS NOT NULL));

ALTER TABLE "retry_policies"
  ADD CONSTRAINT "retry_policies_event_type_check" CHECK (length("event_type") BETWEEN 1 AND 200),
  ADD CONSTRAINT "retry_policies_max_attempts_check" CHECK ("max_attempts" BETWEEN 1 AND 1000),
  ADD CONSTRAINT "retry_policies_base_delay_check" CHECK ("base_delay_ms" BETWEEN 0 AND 604800000),
  ADD CONSTRAINT "retry_policies_max_delay_check" CHECK ("max_delay_ms" BETWEEN "base_delay_ms" AND 2592000000::bigint),
  ADD CONSTRAINT "retry_policies_timeout_check" CHECK ("timeout_ms" BETWEEN 100 AND 300000),
  ADD CONSTRAINT "retry_policies_concurrency_check" CHECK ("concurrency" IS NULL OR "concurrency" BETWEEN 1 AND 10000),
  ADD CONSTRAINT "retry_policies_target_url_check" CHECK ("target_url" IS NULL OR "target_url" ~ '^https?://');

ALTER TABLE "redrives"
  ADD CONSTRAINT "redrives_rate_check" CHECK ("rate_per_second" BETWEEN 1 AND 100000),
  ADD CONSTRAINT "redrives_counts_check" CHECK ("processed" >= 0 AND "requeued" >= 0 AND "skipped" >= 0 AND "total" >= 0);

-- The default policy covers every event type without a policy of its own. It has no delivery
-- target, so until an admin sets one, events are held PENDING rather than burned.
INSERT INTO "retry_policies" ("event_type") VALUES ('*');

-- Every insert and update is stamped with the change cursor. A BEFORE trigger (not only column
-- defaults) so a writer cannot forge or reuse a cursor, and so updates get a fresh one. Updates
-- also bump the version (optimistic concurrency), refresh updated_at, and keep resolved_at in
-- step with the status, so plain SQL status changes stay legal under the CHECKs above.
CREATE FUNCTION "tg_dead_letters__stamp"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.change_id := nextval('lazarus_change_seq');
  NEW.change_xid := pg_current_xact_id();
  IF TG_OP = 'UPDATE' THEN
    NEW.version := OLD.version + 1;
    NEW.updated_at := now();
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
END;
$$;

CREATE TRIGGER "tg_dead_letters__stamp" BEFORE INSERT OR UPDATE ON "dead_letters"
  FOR EACH ROW EXECUTE FUNCTION "tg_dead_letters__stamp"();

CREATE FUNCTION "tg_delivery_attempts__stamp"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.change_id := nextval('lazarus_change_seq');
  NEW.change_xid := pg_current_xact_id();
  RETURN NEW;
END;
$$;

CREATE TRIGGER "tg_delivery_attempts__stamp" BEFORE INSERT ON "delivery_attempts"
  FOR EACH ROW EXECUTE FUNCTION "tg_delivery_attempts__stamp"();

-- The NOTIFY hint: one per statement (not per row: NOTIFY takes a cluster-wide lock at commit, so
-- fewer and smaller is cheaper), sent after the statement on channel lazarus_changes. It carries
-- the table, the operation, the row count and the highest change id, plus up to 50 ids: never
-- row data. Listeners re-read rows by cursor, so a hint that is lost, folded or forged costs
-- latency, never data. When the notification queue is over half full (a listener stuck in a
-- transaction), the hint is skipped so the writer's COMMIT cannot fail; catch-up covers the gap.
CREATE FUNCTION "tg_lazarus__notify"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  hint jsonb;
BEGIN
  IF pg_notification_queue_usage() > 0.5 THEN
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

CREATE TRIGGER "tg_dead_letters__notify_insert" AFTER INSERT ON "dead_letters"
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION "tg_lazarus__notify"();
CREATE TRIGGER "tg_dead_letters__notify_update" AFTER UPDATE ON "dead_letters"
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION "tg_lazarus__notify"();
CREATE TRIGGER "tg_delivery_attempts__notify_insert" AFTER INSERT ON "delivery_attempts"
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION "tg_lazarus__notify"();

-- Queue tables churn: vacuum them early so dead tuples do not slow claims and scans.
ALTER TABLE "dead_letters" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
