-- Error-text search moves to a side table. PostgreSQL cannot update a row in place (HOT) when an
-- indexed column changes, and every claim and completion changes `status`, so each of them wrote
-- fresh entries into every index of dead_letters — including trigram indexes over the error message
-- and the (often kilobytes long) stack trace, and a full-text index no query used. Extracting those
-- trigrams and lexemes was ~85% of the cost of a status change (100-row claim: 120 ms → 15 ms
-- without them). Error texts never change after insert, so the copy here is written once, and
-- status changes no longer touch it.

DROP INDEX "dead_letters_error_fts";
DROP INDEX "dead_letters_error_stack_trgm";
DROP INDEX "dead_letters_error_message_trgm";

-- One row per dead letter, same id; kept in step by the triggers below (no foreign key, so a
-- TRUNCATE of dead_letters needs no CASCADE).
CREATE TABLE "dead_letter_error_texts" (
    "dead_letter_id" BIGINT NOT NULL PRIMARY KEY,
    "error_message" TEXT NOT NULL,
    "error_stack" TEXT
);

INSERT INTO "dead_letter_error_texts" ("dead_letter_id", "error_message", "error_stack")
SELECT "id", "error_message", "error_stack" FROM "dead_letters";

CREATE INDEX "dead_letter_error_texts_message_trgm" ON "dead_letter_error_texts" USING GIN ("error_message" gin_trgm_ops);
CREATE INDEX "dead_letter_error_texts_stack_trgm" ON "dead_letter_error_texts" USING GIN ("error_stack" gin_trgm_ops);

CREATE FUNCTION "tg_dead_letters__error_texts_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_error_texts (dead_letter_id, error_message, error_stack)
  SELECT id, error_message, error_stack FROM new_rows;
  RETURN NULL;
END $$;

-- Fires only for statements that SET an error column and rows where it really changed.
CREATE FUNCTION "tg_dead_letters__error_texts_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE dead_letter_error_texts SET error_message = NEW.error_message, error_stack = NEW.error_stack
   WHERE dead_letter_id = NEW.id;
  RETURN NULL;
END $$;

CREATE FUNCTION "tg_dead_letters__error_texts_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM dead_letter_error_texts t USING old_rows o WHERE t.dead_letter_id = o.id;
  RETURN NULL;
END $$;

CREATE FUNCTION "tg_dead_letters__error_texts_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE dead_letter_error_texts;
  RETURN NULL;
END $$;

CREATE TRIGGER "tg_dead_letters__error_texts_insert" AFTER INSERT ON "dead_letters"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__error_texts_insert"();
CREATE TRIGGER "tg_dead_letters__error_texts_update" AFTER UPDATE OF "error_message", "error_stack" ON "dead_letters"
  FOR EACH ROW WHEN (OLD."error_message" IS DISTINCT FROM NEW."error_message" OR OLD."error_stack" IS DISTINCT FROM NEW."error_stack")
  EXECUTE FUNCTION "tg_dead_letters__error_texts_update"();
CREATE TRIGGER "tg_dead_letters__error_texts_delete" AFTER DELETE ON "dead_letters"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__error_texts_delete"();
CREATE TRIGGER "tg_dead_letters__error_texts_truncate" AFTER TRUNCATE ON "dead_letters"
  FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__error_texts_truncate"();
