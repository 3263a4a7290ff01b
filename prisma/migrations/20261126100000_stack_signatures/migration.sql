-- Error signatures from the stack's top frames (issue 19 item 1).
--
-- An error group is keyed by (event_type, error_kind, signature). Until now the signature was the
-- producer's fingerprint or else the message signature (lazarus_error_signature, migration
-- 20261121100000_read_side), so one message raised from two call sites was one group, and one
-- failure whose message differs was several. The group signature is now, in ONE function,
-- lazarus_group_signature(fingerprint, error_signature, error_stack):
--   * the fingerprint when the producer set one (as Sentry allows): it wins;
--   * else the message signature, plus, on the following lines, the top frames of the stack
--     normalised by lazarus_stack_frames below (when the stack has any recognisable frame).
-- dead_letters.error_signature (the API's errorSignature, topErrors, the errorSignatures filter)
-- stays the message signature: cheap, indexed, and what "the same message" means.
-- Every place that derived the key from coalesce(fingerprint, error_signature) now calls the
-- function: the row trigger that stamps error_group_id (now also on UPDATE OF error_stack) and the
-- three statement triggers that append to the ledger. The folder and the tombstones take the key
-- from the ledger and the row, so they follow.
--
-- Frames (lazarus_stack_frames): the first 5 frame lines of the stack's first 2 KB (Python, whose
-- traceback lists the innermost call last: its last 5 frames in its last 2 KB, innermost first),
-- each as "at <function> (<file>)", at most 120 characters:
--   Node/JS   "    at fn (/app/src/x.ts:12:5)"      → "at fn (src/x.ts)"; "at async fn", "at new C",
--             anonymous "at /app/x.js:1:2" → "at (app/x.js)"; "node:internal/…" kept whole
--   JVM       "\tat pkg.C.m(C.java:12)"            → "at pkg.C.m(C.java)"; "~[app.jar:1.0]" dropped
--   .NET      "   at N.C.M(Int32 id) in C:\src\N\C.cs:line 42" → "at N.C.M(Int32 id) (N/C.cs)"
--   Python    '  File "/srv/app/x.py", line 12, in fn' → "at fn (app/x.py)"
--   Go        "pkg.(*T).m(0xc000…)\n\t/build/pkg/t.go:88 +0x1d" → "at pkg.(*T).m (pkg/t.go)";
--             runtime.* and panic(…) frames skipped
--   Ruby      "/app/models/order.rb:12:in `charge'" (and "from …", 3.4's 'Order#charge') → "at charge (models/order.rb)"
--   Firefox/Safari "fn@https://cdn/app.js:1:2"     → "at fn (cdn/app.js)"
-- Line and column numbers go; a path keeps its last two segments (directory and file: a root,
-- scheme or host before them goes), without query string, fragment or "@1.2.3" version; then, as in
-- messages, uuids, hex addresses (0x…) and hex ids of 6+ characters with a digit (bundle hashes,
-- CGLIB suffixes) become <hex>, standalone numbers <n>, JVM generated classes (GeneratedMethodAccessor12, $Proxy42,
-- $HibernateProxy$…) <id>, and characters outside printable ASCII '?' (so the key's bytes stay
-- bounded). Lines that are not frames (the message lines at the top of a JS or .NET stack, "Caused
-- by:", "... 12 more") are skipped. No frame → NULL, and the group signature is the message
-- signature alone. The group signature is therefore at most 300 + 5 × 124 characters, all frames
-- ASCII: with event_type (≤ 200 characters) it stays under the unique index's 2,704-byte limit.
--
-- Cost: one pass over the lines, string functions first and a regular expression only where a line
-- needs one; it stops at the fifth frame. About 3x the message signature per row with a stack
-- (docs/benchmarks.md, Session 14): PL/pgSQL's per-statement cost dominates.

CREATE FUNCTION "lazarus_stack_frames"(stack text) RETURNS text
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT AS $$
DECLARE
  is_python boolean := strpos(stack, 'File "') > 0 AND strpos(stack, '", line ') > 0;
  line text;
  prev text := '';
  t text;
  fn text;
  loc text;
  frame text;
  frames text[] := '{}';
BEGIN
  FOREACH line IN ARRAY string_to_array(CASE WHEN is_python THEN right(stack, 2048) ELSE left(stack, 2048) END, E'\n') LOOP
    t := ltrim(rtrim(line, E' \t\r'), E' \t');
    frame := NULL;
    loc := NULL;
    IF is_python THEN
      IF t LIKE 'File "%", line %, in %' THEN
        fn := substr(t, strpos(t, ', in ') + 5);
        loc := split_part(t, '"', 2);
      ELSIF t LIKE 'Traceback (most recent call last):%' THEN
        frames := '{}';
      END IF;
    ELSIF t LIKE 'at %' THEN
      -- Node/JS, JVM, .NET: without "at", "async" and a logback jar suffix "~[app.jar:1.2]".
      t := CASE WHEN t LIKE 'at async %' THEN substr(t, 10) ELSE substr(t, 4) END;
      IF strpos(t, '[') > 0 THEN
        t := regexp_replace(t, '\s+~?\[[^\]]*\]$', '');
      END IF;
      IF right(t, 1) = ')' AND strpos(t, ' (') > 0 THEN                  -- Node: fn (location)
        fn := left(t, strpos(t, ' (') - 1);
        loc := substr(t, strpos(t, ' (') + 2, length(t) - strpos(t, ' (') - 2);
      ELSIF strpos(t, ' in ') > 0 AND t LIKE '%:line %' THEN               -- .NET with a file
        fn := left(t, strpos(t, ' in ') - 1);
        loc := substring(t FROM ' in (.+):line \d+$');
      ELSIF strpos(t, '(') = 0 THEN                                        -- Node: anonymous
        fn := NULL;
        loc := t;
      ELSIF t ~ '^[^\s(]+\([^()]*\)$' THEN                                 -- JVM; .NET without a file
        frame := regexp_replace(t, ':\d+\)$', ')');
      END IF;
      IF loc IS NOT NULL AND strpos(t, ':line ') = 0 THEN                -- Node: drop :line:col
        t := loc;
        loc := regexp_replace(loc, '(:\d+){1,2}$', '');
        IF loc = t AND NOT (loc IN ('native', '<anonymous>') OR loc LIKE 'index %') THEN
          loc := NULL;                                                      -- no location: a message line
        END IF;
      END IF;
    ELSIF left(line, 1) = E'\t' AND strpos(line, '.go:') > 0 THEN
      IF t ~ '^.+\.go:\d+( \+0x[0-9a-f]+)?$' AND prev NOT LIKE 'panic(%' AND prev NOT LIKE 'runtime.%' THEN
        fn := regexp_replace(prev, '\([^()]*\)$| in goroutine \d+$', '');
        loc := substring(t FROM '^(.+\.go):\d+');
      END IF;
    ELSIF strpos(t, ':in ') > 0 THEN
      fn := substring(t FROM '^(?:from\s+)?[^:\s][^:]*:\d+:in [`'']([^`'']+)''');
      loc := CASE WHEN fn IS NOT NULL THEN substring(t FROM '^(?:from\s+)?([^:\s][^:]*):\d+:in ') END;
    ELSIF strpos(t, '@') > 0 THEN
      loc := substring(t FROM '^[^@\s]*@(.+):\d+:\d+$');
      fn := nullif(split_part(t, '@', 1), '');
    END IF;
    prev := t;
    IF loc IS NOT NULL THEN
      -- A path keeps its last two segments, without query, fragment or "@1.2.3" version.
      IF loc NOT LIKE 'node:%' AND (strpos(loc, '/') > 0 OR strpos(loc, '\') > 0) THEN
        loc := split_part(split_part(translate(loc, '\', '/'), '?', 1), '#', 1);
        IF strpos(loc, '@') > 0 THEN
          loc := regexp_replace(loc, '@v?[0-9][^/]*', '', 'g');
        END IF;
        loc := reverse(split_part(reverse(loc), '/', 2)) || '/' || reverse(split_part(reverse(loc), '/', 1));
      END IF;
      frame := concat_ws(' ', fn, '(' || loc || ')');
    END IF;
    IF frame IS NOT NULL THEN
      IF translate(frame, '0123456789', '') <> frame THEN
        frame := regexp_replace(regexp_replace(regexp_replace(frame,
                   '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\m0x[0-9a-f]+\M|\m(?=[0-9a-f]{6,}\M)(?=[0-9a-f]*[a-f])[0-9a-f]*[0-9][0-9a-f]*\M', '<hex>', 'gi'),
                   '\m\d+\M', '<n>', 'g'),
                   '(Generated\w*Accessor|\$Proxy)\d+', '\1<id>', 'g');
      END IF;
      IF strpos(frame, '$') > 0 OR octet_length(frame) <> length(frame) THEN
        frame := regexp_replace(regexp_replace(frame, '(\$(?:HibernateProxy|ByteBuddy|MockitoMock)\$)\w+', '\1<id>', 'g'), '[^ -~]', '?', 'g');
      END IF;
      frames := frames || left(frame, 120);
      EXIT WHEN NOT is_python AND cardinality(frames) = 5;
    END IF;
  END LOOP;
  IF cardinality(frames) = 0 THEN
    RETURN NULL;
  ELSIF is_python THEN
    frames := ARRAY(SELECT f FROM unnest(frames) WITH ORDINALITY AS x(f, n) ORDER BY n DESC LIMIT 5);
  END IF;
  RETURN 'at ' || array_to_string(frames, E'\nat ');
END $$;

-- The group signature. Used by the row trigger (with the message signature recomputed: a BEFORE
-- trigger runs before the generated error_signature column), the ledger triggers and this
-- migration's recompute; nothing else computes it (TypeScript only reads error_groups.signature).
CREATE FUNCTION "lazarus_group_signature"(fingerprint text, error_signature text, error_stack text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(fingerprint, error_signature || coalesce(E'\n' || lazarus_stack_frames(error_stack), ''))
$$;

-- The row's group, now from the group signature; recomputed when the stack changes too.
CREATE OR REPLACE FUNCTION "tg_dead_letters__error_group_id"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.error_group_id := lazarus_error_group_id(NEW.event_type, NEW.error_kind,
                          lazarus_group_signature(NEW.fingerprint, lazarus_error_signature(NEW.error_message), NEW.error_stack));
  RETURN NEW;
END $$;

DROP TRIGGER "tg_dead_letters__error_group_id" ON "dead_letters";
CREATE TRIGGER "tg_dead_letters__error_group_id"
  BEFORE INSERT OR UPDATE OF "event_type", "error_kind", "fingerprint", "error_message", "error_stack", "error_group_id"
  ON "dead_letters" FOR EACH ROW EXECUTE FUNCTION "tg_dead_letters__error_group_id"();

-- The ledger triggers. A group's rows share its key, so its signature is computed once per ledger
-- row from any of them, not once per changed row: the row trigger above already paid for each.
-- Insert and delete take it from the rows' aggregates (the fingerprint if any, else the message
-- signature and a stack: every stack of the group gives the same frames). The UPDATE trigger
-- first sums (most statements, claims and outcomes, sum to nothing), then reads one row of each
-- group left, so a full-table status UPDATE reads no stack.
CREATE OR REPLACE FUNCTION "tg_dead_letters__error_groups_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued,
                                  first_seen, last_seen, queues, sources, sample_id)
  SELECT error_group_id, event_type, error_kind,
         lazarus_group_signature(min(fingerprint), min(error_signature), max(error_stack COLLATE "C")), lazarus_rollup_bucket(created_at),
         count(*), sum(lazarus_is_unresolved(status)), sum(lazarus_is_unresolved(status)), 0,
         min(created_at), max(created_at), array_agg(DISTINCT queue), array_agg(DISTINCT source), min(id)
    FROM added GROUP BY error_group_id, event_type, error_kind, lazarus_rollup_bucket(created_at);
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "tg_dead_letters__error_groups_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH d AS (
    SELECT group_id, event_type, error_kind, bucket, sum(n) AS total, sum(u) AS unresolved,
           CASE WHEN sum(n) > 0 THEN min(created_at) END AS first_seen, CASE WHEN sum(n) > 0 THEN max(created_at) END AS last_seen
      FROM (SELECT error_group_id AS group_id, event_type, error_kind, lazarus_rollup_bucket(created_at) AS bucket, created_at,
                   1 AS n, lazarus_is_unresolved(status) AS u
              FROM new_rows
            UNION ALL
            SELECT error_group_id, event_type, error_kind, lazarus_rollup_bucket(created_at), created_at, -1, -lazarus_is_unresolved(status)
              FROM old_rows) c
     WHERE group_id IS NOT NULL
     GROUP BY 1, 2, 3, 4
    HAVING sum(n) <> 0 OR sum(u) <> 0
  ), one AS (
    SELECT DISTINCT ON (group_id) group_id, fingerprint, error_signature, error_stack
      FROM (SELECT error_group_id AS group_id, fingerprint, error_signature, error_stack, 0 AS side FROM new_rows
            UNION ALL
            SELECT error_group_id, fingerprint, error_signature, error_stack, 1 FROM old_rows) r
     WHERE group_id IN (SELECT group_id FROM d)
     ORDER BY group_id, side
  ), s AS (
    SELECT group_id, lazarus_group_signature(fingerprint, error_signature, error_stack) AS signature FROM one
  )
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued,
                                  first_seen, last_seen)
  SELECT d.group_id, d.event_type, d.error_kind, s.signature, d.bucket, d.total, d.unresolved, 0, greatest(0, d.unresolved),
         d.first_seen, d.last_seen
    FROM d JOIN s USING (group_id);
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "tg_dead_letters__error_groups_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued)
  SELECT error_group_id, event_type, error_kind,
         lazarus_group_signature(min(fingerprint), min(error_signature), max(error_stack COLLATE "C")), lazarus_rollup_bucket(created_at),
         0, -count(*), 0, 0
    FROM gone WHERE status IN ('PENDING', 'PROCESSING', 'EXHAUSTED') AND error_group_id IS NOT NULL
   GROUP BY error_group_id, event_type, error_kind, lazarus_rollup_bucket(created_at);
  RETURN NULL;
END $$;

-- Recompute: every row goes to the group its key now says, in this transaction, and the groups
-- follow, so no failure is split across the upgrade (old rows in the old group, new ones in a new
-- one). Only rows without a fingerprint whose stack has frames change group.
--   1. Writers wait (the lock), the folder steps aside (its lock), and the ledger is folded first,
--      so every group exists with exact counts before rows move between them.
--   2. The rows that move, with their old and new group.
--   3. Their error_group_id is written with the table's own triggers off (each user trigger that
--      is enabled is disabled and enabled again): no row looks changed to the live feed (the
--      change stamp stays), and no delta is appended, because
--   4. the groups are moved here: a new group (one per new key) takes its rows' counts, first and
--      last seen, queues, sources, hourly counts and first row, and inherits the status, note and
--      regressed_at of the group its rows came from (an IGNORED failure stays ignored, an
--      ACKNOWLEDGED one acknowledged; OPEN or ACKNOWLEDGED with no unresolved member is RESOLVED,
--      the folder's rule), with a history row saying so; no alert is raised. The old group gives
--      up those counts and hours; its first/last seen and first row become those of its remaining
--      stored members (if any), it resolves if no member is left unresolved, and it is deleted if
--      it counted nothing else (every event it ever had moved).
-- 1,000,000 rows: docs/benchmarks.md (Session 14).
LOCK TABLE "dead_letters" IN SHARE ROW EXCLUSIVE MODE;
SELECT pg_advisory_xact_lock(4757231860019247);
SELECT lazarus_fold_error_groups(2147483647);

CREATE TEMP TABLE "lazarus_regrouped" ON COMMIT DROP AS
WITH r AS MATERIALIZED (
  SELECT id, error_group_id AS old_id, event_type, error_kind, status, created_at, queue, source,
         lazarus_group_signature(NULL, error_signature, error_stack) AS signature
    FROM dead_letters
   WHERE fingerprint IS NULL AND error_stack IS NOT NULL
)
SELECT r.*, lazarus_error_group_id(event_type, error_kind, signature) AS new_id
  FROM r
 WHERE lazarus_error_group_id(event_type, error_kind, signature) IS DISTINCT FROM old_id;
ANALYZE "lazarus_regrouped";

-- What the old groups keep (read before the UPDATE leaves dead index entries behind).
CREATE TEMP TABLE "lazarus_kept" ON COMMIT DROP AS
SELECT d.error_group_id AS id, min(d.created_at) AS first_seen, max(d.created_at) AS last_seen, min(d.id) AS sample_id
  FROM dead_letters d
 WHERE d.error_group_id IN (SELECT old_id FROM lazarus_regrouped)
   AND NOT EXISTS (SELECT 1 FROM lazarus_regrouped r WHERE r.id = d.id)
 GROUP BY 1;

DO $$
DECLARE
  enabled text[];
  t text;
BEGIN
  SELECT coalesce(array_agg(tgname::text), '{}') INTO enabled
    FROM pg_trigger WHERE tgrelid = '"dead_letters"'::regclass AND NOT tgisinternal AND tgenabled <> 'D';
  FOREACH t IN ARRAY enabled LOOP
    EXECUTE format('ALTER TABLE "dead_letters" DISABLE TRIGGER %I', t);
  END LOOP;
  UPDATE dead_letters d SET error_group_id = r.new_id FROM lazarus_regrouped r WHERE d.id = r.id;
  FOREACH t IN ARRAY enabled LOOP
    EXECUTE format('ALTER TABLE "dead_letters" ENABLE TRIGGER %I', t);
  END LOOP;
END $$;

WITH moved AS (
  SELECT new_id, min(old_id) AS old_id, min(event_type) AS event_type, min(error_kind::text)::"ErrorKind" AS error_kind,
         min(signature) AS signature, count(*) AS total, sum(lazarus_is_unresolved(status)) AS unresolved,
         min(created_at) AS first_seen, max(created_at) AS last_seen, min(id) AS sample_id,
         (array_agg(DISTINCT queue ORDER BY queue))[1:100] AS queues, (array_agg(DISTINCT source ORDER BY source))[1:100] AS sources
    FROM lazarus_regrouped GROUP BY new_id
), made AS (
  INSERT INTO error_groups AS g (id, event_type, error_kind, signature, status, first_seen, last_seen, total_count, unresolved_count,
                                 queues, sources, sample_dead_letter_id, regressed_at, note)
  SELECT m.new_id, m.event_type, m.error_kind, m.signature,
         CASE WHEN o.status IN ('IGNORED', 'RESOLVED') THEN o.status
              WHEN m.unresolved = 0 THEN 'RESOLVED'
              ELSE coalesce(o.status, 'OPEN') END::"ErrorGroupStatus",
         m.first_seen, m.last_seen, m.total, m.unresolved, m.queues, m.sources, m.sample_id, o.regressed_at, o.note
    FROM moved m LEFT JOIN error_groups o ON o.id = m.old_id
   ORDER BY m.new_id
  ON CONFLICT (id) DO UPDATE
    SET total_count = g.total_count + excluded.total_count,
        unresolved_count = g.unresolved_count + excluded.unresolved_count,
        first_seen = least(g.first_seen, excluded.first_seen),
        last_seen = greatest(g.last_seen, excluded.last_seen),
        queues = lazarus_array_union(g.queues, excluded.queues),
        sources = lazarus_array_union(g.sources, excluded.sources),
        updated_at = now()
  RETURNING g.id, g.status, (xmax = 0) AS is_new
)
INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
SELECT made.id, NULL, made.status, 'system',
       'first seen: split by stack frames from group ' || moved.old_id || ' (migration 20261126100000_stack_signatures)'
  FROM made JOIN moved ON moved.new_id = made.id
 WHERE made.is_new;

INSERT INTO error_group_hours AS h (group_id, bucket, count)
SELECT new_id, lazarus_rollup_bucket(created_at), count(*) FROM lazarus_regrouped GROUP BY 1, 2 ORDER BY 1, 2
ON CONFLICT (group_id, bucket) DO UPDATE SET count = h.count + excluded.count;

WITH gone AS (
  SELECT old_id, lazarus_rollup_bucket(created_at) AS bucket, count(*) AS n FROM lazarus_regrouped WHERE old_id IS NOT NULL GROUP BY 1, 2
)
UPDATE error_group_hours h SET count = h.count - gone.n FROM gone WHERE h.group_id = gone.old_id AND h.bucket = gone.bucket;
DELETE FROM error_group_hours WHERE count <= 0 AND group_id IN (SELECT old_id FROM lazarus_regrouped);

WITH left_behind AS (
  SELECT old_id AS id, count(*) AS total, sum(lazarus_is_unresolved(status)) AS unresolved
    FROM lazarus_regrouped WHERE old_id IS NOT NULL GROUP BY old_id
), changed AS (
  UPDATE error_groups g
     SET total_count = greatest(0, g.total_count - l.total),
         unresolved_count = greatest(0, g.unresolved_count - l.unresolved),
         status = CASE WHEN g.status IN ('OPEN', 'ACKNOWLEDGED') AND g.unresolved_count - l.unresolved <= 0 THEN 'RESOLVED'
                       ELSE g.status END::"ErrorGroupStatus",
         first_seen = coalesce(k.first_seen, g.first_seen),
         last_seen = coalesce(k.last_seen, g.last_seen),
         sample_dead_letter_id = CASE WHEN g.sample_dead_letter_id IN (SELECT id FROM lazarus_regrouped) THEN k.sample_id
                                      ELSE g.sample_dead_letter_id END,
         updated_at = now()
    FROM left_behind l JOIN error_groups before ON before.id = l.id LEFT JOIN lazarus_kept k ON k.id = l.id
   WHERE g.id = l.id
  RETURNING g.id, g.total_count, before.status AS from_status, g.status AS to_status
)
INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
SELECT id, from_status, to_status, 'system', 'no unresolved members (the rest moved to groups split by stack frames)'
  FROM changed WHERE from_status <> to_status AND total_count > 0;

DELETE FROM error_groups WHERE total_count = 0 AND id IN (SELECT old_id FROM lazarus_regrouped);
