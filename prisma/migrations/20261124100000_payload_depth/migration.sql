-- Payloads and headers nested at most 100 levels deep.
--
-- PostgreSQL's jsonb accepts documents nested thousands of levels deep, but every reader of them
-- (JSON.stringify in Node, GraphQL's serialisation, the live feed's fan-out) recurses, and an
-- 8,000-level payload inserted by plain SQL overflowed the stack on every path that served it: its
-- pages failed, and subscribers sharing a stream with it stopped receiving events. So the table
-- refuses such rows, and a SQL producer learns it at INSERT time. 100 levels is far beyond any real
-- event and far within what every reader handles. `strict $.**{101}` is true when any value sits
-- at level 101 (the document itself is level 0; arrays count like objects); it walks the document
-- once, in C.
--
-- Rows already stored are not rewritten: the constraint is validated when none of them is deeper,
-- and otherwise left NOT VALID (new rows are still checked) with a notice naming how to find them.

ALTER TABLE "dead_letters"
  ADD CONSTRAINT "dead_letters_payload_depth_check" CHECK (NOT jsonb_path_exists("payload", 'strict $.**{101}')) NOT VALID,
  ADD CONSTRAINT "dead_letters_headers_depth_check" CHECK (NOT jsonb_path_exists("headers", 'strict $.**{101}')) NOT VALID;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM dead_letters WHERE jsonb_path_exists(payload, 'strict $.**{101}') OR jsonb_path_exists(headers, 'strict $.**{101}')) THEN
    RAISE NOTICE 'dead_letters holds payloads or headers nested deeper than 100 levels; the depth checks stay NOT VALID. Find them with: SELECT id FROM dead_letters WHERE jsonb_path_exists(payload, ''strict $.**{101}'') OR jsonb_path_exists(headers, ''strict $.**{101}'')';
  ELSE
    ALTER TABLE dead_letters VALIDATE CONSTRAINT dead_letters_payload_depth_check;
    ALTER TABLE dead_letters VALIDATE CONSTRAINT dead_letters_headers_depth_check;
  END IF;
END $$;
