-- Deletions reach the live feed.
--
-- The feed reads rows by change stamp, so a deleted row, being gone, was never read: a live
-- dashboard kept showing it, and a subscriber resuming with a cursor never learned of it. Every
-- removal (deleteDeadLetters, retention purges, a plain SQL DELETE) now leaves a tombstone: the
-- row's id and the columns subscription filters match on, stamped from the same change sequence
-- and transaction id as every other change, so the feed reads tombstones in cursor order with the
-- rest and a resumed subscriber replays them. One statement-level trigger writes all of a
-- statement's tombstones from its transition table, and the tombstones' own statement trigger sends
-- the usual single NOTIFY hint: a purge of 5,000 rows is one hint, not 5,000. Tombstones are
-- trimmed after 7 days by the retention job (a subscriber resuming from an older cursor misses the
-- deletions before that). TRUNCATE fires no delete triggers and leaves none.

CREATE TABLE "dead_letter_tombstones" (
    "id" BIGINT NOT NULL,
    "event_type" TEXT NOT NULL,
    "queue" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "ordering_key" TEXT,
    "error_kind" "ErrorKind" NOT NULL,
    "status" "DeadLetterStatus" NOT NULL,
    "error_signature" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,
    "next_attempt_at" TIMESTAMPTZ(6),
    "deleted_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "change_id" BIGINT NOT NULL DEFAULT nextval('lazarus_change_seq'),
    "change_xid" xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT "dead_letter_tombstones_pkey" PRIMARY KEY ("change_id")
);
CREATE INDEX "dead_letter_tombstones_change_cursor_idx" ON "dead_letter_tombstones" ("change_xid", "change_id");
CREATE INDEX "dead_letter_tombstones_deleted_idx" ON "dead_letter_tombstones" ("deleted_at");

CREATE FUNCTION "tg_dead_letters__tombstone"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_tombstones (id, event_type, queue, source, ordering_key, error_kind, status,
                                      error_signature, attempts, created_at, updated_at, next_attempt_at)
  SELECT id, event_type, queue, source, ordering_key, error_kind, status,
         error_signature, attempts, created_at, updated_at, next_attempt_at
    FROM gone;
  RETURN NULL;
END;
$$;

CREATE TRIGGER "tg_dead_letters__tombstone" AFTER DELETE ON "dead_letters"
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__tombstone"();
CREATE TRIGGER "tg_dead_letter_tombstones__notify_insert" AFTER INSERT ON "dead_letter_tombstones"
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION "tg_lazarus__notify"();
