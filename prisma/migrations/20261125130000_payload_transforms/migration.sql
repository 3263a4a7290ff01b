-- Payload transforms (issue 19 item 3): a JSON Patch (RFC 6902) or JSON Merge Patch (RFC 7396)
-- applied to every event a DeadLetterFilter selects, as one recorded, undoable change.
--
-- A transform is one row in "transforms" (who, why, the patch, the filter, the counts). Each event it
-- changed gets a PAYLOAD_TRANSFORMED history row pointing to it ("transform_id"), whose "before"
-- and "after" hold `{ payload, status }` as jsonb copied inside the database: undo restores
-- before.payload from there, so the restored payload is the same jsonb value (payload::text
-- byte-identical), never a round trip through JavaScript numbers. Undo writes TRANSFORM_UNDONE rows
-- with the same transform_id, and only where the payload still equals after.payload (an event
-- edited since is left alone and reported).
--
-- ADD VALUE runs inside the migration's transaction (PostgreSQL 12+); nothing here uses the new values.
ALTER TYPE "ActionKind" ADD VALUE 'PAYLOAD_TRANSFORMED';
ALTER TYPE "ActionKind" ADD VALUE 'TRANSFORM_UNDONE';

CREATE TYPE "TransformStatus" AS ENUM ('APPLIED', 'UNDONE');
CREATE TYPE "PatchKind" AS ENUM ('JSON_PATCH', 'MERGE_PATCH');

CREATE TABLE "transforms" (
    "id" BIGSERIAL NOT NULL,
    "status" "TransformStatus" NOT NULL DEFAULT 'APPLIED',
    "kind" "PatchKind" NOT NULL,
    "patch" JSONB NOT NULL,
    "filter" JSONB NOT NULL,
    "requeue" BOOLEAN NOT NULL DEFAULT false,
    "reason" TEXT,
    "created_by" TEXT NOT NULL,
    "matched" INTEGER NOT NULL DEFAULT 0,
    "changed" INTEGER NOT NULL DEFAULT 0,
    "unchanged" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "undone_at" TIMESTAMPTZ(6),
    "undone_by" TEXT,
    "undo_reason" TEXT,
    "restored" INTEGER NOT NULL DEFAULT 0,
    "kept_edited" INTEGER NOT NULL DEFAULT 0,
    "kept_missing" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "transforms_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "transforms_created_idx" ON "transforms"("created_at");

-- Counts never go negative, and an undone transform says when and by whom.
ALTER TABLE "transforms"
  ADD CONSTRAINT "transforms_counts_check" CHECK ("matched" >= 0 AND "changed" >= 0 AND "unchanged" >= 0 AND "failed" >= 0
                                                  AND "restored" >= 0 AND "kept_edited" >= 0 AND "kept_missing" >= 0),
  ADD CONSTRAINT "transforms_undone_check" CHECK (("status" = 'UNDONE') = ("undone_at" IS NOT NULL AND "undone_by" IS NOT NULL));

ALTER TABLE "dead_letter_actions" ADD COLUMN "transform_id" BIGINT;
-- Undo reads a transform's history rows; partial, because almost no action has a transform.
CREATE INDEX "dead_letter_actions_transform_idx" ON "dead_letter_actions"("transform_id", "dead_letter_id") WHERE "transform_id" IS NOT NULL;
