-- Write side: an all-or-nothing guard for bulk changes by explicit ids.
--
-- An operator change by ids is one statement: a CTE updates the rows whose version still matches
-- what the service read, inserts their history rows, and then calls this function with the number
-- of rows it meant to change. If another writer got in between (fewer rows changed), raising
-- aborts the whole statement, so neither the row changes nor their history are kept and the
-- caller gets CONFLICT. SQLSTATE LZ409 is ours; src/db/sql/writeTarget.ts recognises it.
CREATE FUNCTION "lazarus_expect_rows"(expected bigint, actual bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  IF expected >= 0 AND expected <> actual THEN
    RAISE EXCEPTION 'lazarus: expected to change % rows, changed %', expected, actual USING ERRCODE = 'LZ409';
  END IF;
  RETURN actual;
END;
$$;

-- Throttled redrives. The set of events a redrive requeues is fixed when it starts (what matched
-- the filter, in an eligible status, at that moment: the number the operator saw in the dry run),
-- one row per event in redrive_items. The runner walks it in dead-letter id order; `last_id` is
-- the resume point, advanced in the same statement that requeues a batch, so a batch is either
-- fully done and recorded or not done at all, and a restart never requeues anything twice.
-- A lease (lease_owner, lease_expires_at) keeps one runner per redrive across processes.
ALTER TABLE "redrives"
  ADD COLUMN "force" BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN "reason" TEXT,
  ADD COLUMN "batch_size" INTEGER NOT NULL DEFAULT 500,
  ADD COLUMN "lease_owner" TEXT,
  ADD COLUMN "lease_expires_at" TIMESTAMPTZ(6),
  ADD CONSTRAINT "redrives_batch_size_check" CHECK ("batch_size" BETWEEN 1 AND 5000);

CREATE TABLE "redrive_items" (
    "redrive_id" BIGINT NOT NULL,
    "dead_letter_id" BIGINT NOT NULL,

    CONSTRAINT "redrive_items_pkey" PRIMARY KEY ("redrive_id", "dead_letter_id")
);

ALTER TABLE "redrive_items" ADD CONSTRAINT "redrive_items_redrive_id_fkey" FOREIGN KEY ("redrive_id") REFERENCES "redrives"("id") ON DELETE CASCADE ON UPDATE CASCADE;
