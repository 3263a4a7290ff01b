-- Payload transforms in resumable batches (issue 19 item 3: "large groups run in batches,
-- resumably, like redrives"). Until now a transform was one transaction capped at 10,000 events,
-- holding the live feed's horizon for seconds. Now:
--
-- * applyTransform checks the patch on the whole selection first (read-only, batch by batch), then
--   records the transform (PREPARING) with its exact targets in "transform_items": every member's id
--   and the md5 of the payload::text it validated, written in chunks, and moves it to RUNNING. (A
--   request that dies while recording leaves it PREPARING; once its lease lapses the runner marks it
--   FAILED: nothing was changed.) The redrive runner (src/workers/redriveRunner.ts)
--   claims RUNNING transforms by lease, as it claims redrives, and applies them 500 items per
--   transaction: each batch locks its members, skips those whose payload no longer has that md5
--   (edited since), writes payloads + PAYLOAD_TRANSFORMED history, deletes its items and adds to the
--   counts, so a batch is recorded exactly when it happened. The items left ARE the work left: after
--   a kill -9 the next claim continues there, and no member is patched twice.
-- * undoTransform moves the transform to UNDOING; the runner restores 500 history rows per statement
--   after "undo_last_id", so undo is resumable the same way.
-- * FAILED: batches kept failing for a reason other than database trouble ("error" says why). A
--   FAILED transform can be undone (that restores whatever it applied).
--
-- PREPARING → RUNNING | FAILED; RUNNING → APPLIED | FAILED; RUNNING | APPLIED | FAILED → UNDOING → UNDONE | FAILED.
-- ADD VALUE runs inside the migration's transaction (PostgreSQL 12+); nothing below uses the new
-- values (a new enum value cannot be used before its transaction commits).
ALTER TYPE "TransformStatus" ADD VALUE 'PREPARING' BEFORE 'APPLIED';
ALTER TYPE "TransformStatus" ADD VALUE 'RUNNING' BEFORE 'APPLIED';
ALTER TYPE "TransformStatus" ADD VALUE 'UNDOING' BEFORE 'UNDONE';
ALTER TYPE "TransformStatus" ADD VALUE 'FAILED';

ALTER TABLE "transforms"
    ADD COLUMN "skip_failing" BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN "processed" INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN "skipped" INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN "skipped_ids" BIGINT[] NOT NULL DEFAULT '{}',
    ADD COLUMN "failures" JSONB NOT NULL DEFAULT '[]',
    ADD COLUMN "undo_processed" INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN "undo_last_id" BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN "kept_edited_ids" BIGINT[] NOT NULL DEFAULT '{}',
    ADD COLUMN "kept_missing_ids" BIGINT[] NOT NULL DEFAULT '{}',
    ADD COLUMN "error" TEXT,
    ADD COLUMN "lease_owner" TEXT,
    ADD COLUMN "lease_expires_at" TIMESTAMPTZ(6),
    ADD COLUMN "applied_at" TIMESTAMPTZ(6),
    ADD COLUMN "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now();

-- Transforms recorded before this migration were applied whole, in one transaction.
UPDATE "transforms" SET "processed" = "matched", "applied_at" = "created_at";

-- Progress never runs past the targets, and counts never go negative.
ALTER TABLE "transforms"
  ADD CONSTRAINT "transforms_progress_check" CHECK ("processed" >= 0 AND "processed" <= "matched" AND "skipped" >= 0 AND "undo_processed" >= 0);

CREATE INDEX "transforms_status_idx" ON "transforms"("status");

-- The members a RUNNING transform has still to patch, with the md5 of the payload::text its
-- validation read (16 bytes, as uuid): a member whose payload differs at its batch was edited since
-- and is skipped, never overwritten. No foreign key to dead_letters: a member may be deleted meanwhile.
CREATE TABLE "transform_items" (
    "transform_id" BIGINT NOT NULL,
    "dead_letter_id" BIGINT NOT NULL,
    "payload_md5" UUID NOT NULL,
    CONSTRAINT "transform_items_pkey" PRIMARY KEY ("transform_id", "dead_letter_id"),
    CONSTRAINT "transform_items_transform_id_fkey" FOREIGN KEY ("transform_id") REFERENCES "transforms"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
