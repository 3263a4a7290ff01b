-- TREND kept by the folder, and a NOTIFY when error groups change.
--
-- errorGroups(orderBy: TREND) orders groups by the events recorded in the last 24 hours (this UTC
-- hour and the 23 before it). It summed error_group_hours per matching group at read time and
-- sorted them all: 85 ms p95 at 1,000,000 events and 10,000 groups (docs/benchmarks.md), against a
-- bar of 50 ms. Now each group keeps that sum in error_groups.trend_count and the page walks an
-- index on (trend_count, id), like the other orders.
--
-- The invariant, kept by lazarus_fold_error_groups under its advisory lock:
--   trend_count = sum(error_group_hours.count) of the group's buckets >= error_group_trend_window.start
-- * each fold first slides the window to (its now()'s UTC hour - 23 hours): it subtracts the hours
--   that left the window (index error_group_hours_bucket_idx: one hour's rows, once an hour), or adds
--   them back if the clock went backwards; with no window row it recomputes every group;
-- * then it adds each batch row's total to trend_count when its bucket is inside the window, as it
--   adds the same total to error_group_hours.
-- So trend_count is exact for the window the table names. Readers compare that window with their
-- own hour and fall back to summing the hours when they differ (src/db/sql/errorGroupPage.ts): the
-- order is always the exact one for the folded events; only the first fold of an hour (at most the
-- fold interval after the hour turns, with the service running) changes which path it takes.
--
-- errorGroupChanged is served by one shared reader per process (src/live/errorGroupChanges.ts)
-- woken by NOTIFY lazarus_error_groups, sent by a statement trigger on error_groups: every writer
-- of groups (the folder, operator moves, a hand-written UPDATE) wakes it, at its commit. The
-- payload is empty: the reader re-reads history rows and recently updated groups.

ALTER TABLE "error_groups" ADD COLUMN "trend_count" BIGINT NOT NULL DEFAULT 0;

CREATE TABLE "error_group_trend_window" (
    "only" BOOLEAN PRIMARY KEY DEFAULT true CHECK ("only"),
    "start" TIMESTAMPTZ(6) NOT NULL
);

-- Fill it for the existing groups; the fold keeps it from here on (it waits for this migration's
-- lock on error_groups).
LOCK TABLE "error_groups" IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO "error_group_trend_window" ("start") VALUES (date_trunc('hour', now(), 'UTC') - interval '23 hours');
UPDATE "error_groups" g SET "trend_count" = h.n
  FROM (SELECT group_id, sum(count) AS n FROM error_group_hours
         WHERE bucket >= date_trunc('hour', now(), 'UTC') - interval '23 hours' GROUP BY group_id) h
 WHERE g.id = h.group_id;

CREATE INDEX "error_groups_trend_count_idx" ON "error_groups" ("trend_count", "id");
CREATE INDEX "error_group_hours_bucket_idx" ON "error_group_hours" ("bucket");

-- The fold of migration 20261125130000_error_groups_ledger, with the trend window slid first and
-- trend_count moved with the counts.
CREATE OR REPLACE FUNCTION "lazarus_fold_error_groups"(max_rows int, OUT taken int, OUT changed int) LANGUAGE plpgsql AS $$
DECLARE
  batch lazarus_error_group_fold[];
  created BIGINT[];
  regressed BIGINT[];
  win TIMESTAMPTZ := date_trunc('hour', now(), 'UTC') - interval '23 hours';
  old_win TIMESTAMPTZ;
BEGIN
  taken := 0;
  changed := 0;
  IF NOT pg_try_advisory_xact_lock(4757231860019247) THEN
    taken := -1;
    RETURN;
  END IF;

  -- Slide the trend window to this hour's (see the top of this migration) before counting the batch.
  SELECT start INTO old_win FROM error_group_trend_window;
  IF old_win IS NULL THEN
    UPDATE error_groups g SET trend_count = h.n
      FROM (SELECT g2.id, coalesce((SELECT sum(h2.count) FROM error_group_hours h2 WHERE h2.group_id = g2.id AND h2.bucket >= win), 0) AS n
              FROM error_groups g2) h
     WHERE g.id = h.id AND g.trend_count <> h.n;
    INSERT INTO error_group_trend_window (start) VALUES (win);
  ELSIF old_win <> win THEN
    UPDATE error_groups g SET trend_count = g.trend_count + d.n
      FROM (SELECT group_id, sum(CASE WHEN bucket >= win THEN count ELSE -count END) AS n
              FROM error_group_hours
             WHERE bucket >= least(old_win, win) AND bucket < greatest(old_win, win)
             GROUP BY group_id) d
     WHERE g.id = d.group_id AND d.n <> 0;
    UPDATE error_group_trend_window SET start = win;
  END IF;
  WITH gone AS (
    DELETE FROM error_group_deltas
     WHERE id IN (SELECT id FROM error_group_deltas ORDER BY id LIMIT max_rows)
    RETURNING *
  ), per_hour AS (
    SELECT group_id, min(event_type) AS event_type, min(error_kind::text)::"ErrorKind" AS error_kind, min(signature) AS signature, bucket,
           sum(total) AS total, sum(unresolved) AS unresolved, sum(failures) AS failures, sum(requeued) AS requeued,
           min(first_seen) AS first_seen, max(last_seen) AS last_seen, min(sample_id) AS sample_id, count(*) AS n
      FROM gone GROUP BY group_id, bucket
  ), q AS (
    SELECT group_id, array_agg(DISTINCT v) AS queues FROM gone, unnest(gone.queues) v GROUP BY group_id
  ), s AS (
    SELECT group_id, array_agg(DISTINCT v) AS sources FROM gone, unnest(gone.sources) v GROUP BY group_id
  )
  -- Each hour row carries its group's queues and sources (unioned again below).
  SELECT array_agg(ROW(p.group_id, p.event_type, p.error_kind, p.signature, p.bucket, p.total, p.unresolved, p.failures, p.requeued,
                       p.first_seen, p.last_seen, q.queues, s.sources, p.sample_id)::lazarus_error_group_fold), coalesce(sum(p.n), 0)
    INTO batch, taken
    FROM per_hour p LEFT JOIN q USING (group_id) LEFT JOIN s USING (group_id);
  IF batch IS NULL THEN
    RETURN;
  END IF;

  -- New groups, with their status from their first events; counted below like the others.
  WITH k AS (
    SELECT group_id, min(event_type) AS event_type, min(error_kind::text)::"ErrorKind" AS error_kind, min(signature) AS signature,
           sum(unresolved) AS unresolved, coalesce(min(first_seen), now()) AS first_seen, coalesce(max(last_seen), now()) AS last_seen,
           min(sample_id) AS sample_id
      FROM unnest(batch) GROUP BY group_id
  ), made AS (
    INSERT INTO error_groups (id, event_type, error_kind, signature, status, first_seen, last_seen, sample_dead_letter_id)
    SELECT group_id, event_type, error_kind, signature,
           CASE WHEN unresolved > 0 THEN 'OPEN' ELSE 'RESOLVED' END::"ErrorGroupStatus", first_seen, last_seen, sample_id
      FROM k ORDER BY group_id
    ON CONFLICT DO NOTHING
    RETURNING id, status
  ), history AS (
    INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
    SELECT id, NULL, status, 'system', 'first seen' FROM made
  )
  SELECT coalesce(array_agg(id), '{}') INTO created FROM made;

  -- Outbound alerts (migration 20261125134500_alerts): a new group with unresolved members.
  PERFORM lazarus_raise_alert('NEW_GROUP', 'group:' || g.id,
            format('New error group: %s %s: %s', g.event_type, g.error_kind, g.signature),
            jsonb_build_object('groupId', g.id::text, 'eventType', g.event_type, 'errorKind', g.error_kind, 'signature', g.signature,
                               'firstSeen', g.first_seen))
     FROM error_groups g WHERE g.id = ANY (created) AND g.status = 'OPEN';

  PERFORM 1 FROM error_groups WHERE id IN (SELECT group_id FROM unnest(batch)) ORDER BY id FOR UPDATE;

  WITH k AS (
    SELECT group_id, sum(total) AS total, sum(unresolved) AS unresolved, sum(failures) AS failures, sum(requeued) AS requeued,
           min(first_seen) AS first_seen, max(last_seen) AS last_seen, coalesce(sum(total) FILTER (WHERE bucket >= win), 0) AS recent
      FROM unnest(batch) GROUP BY group_id
  ), q AS (
    SELECT b.group_id, array_agg(DISTINCT v ORDER BY v) AS queues FROM unnest(batch) b, unnest(b.queues) v GROUP BY 1
  ), s AS (
    SELECT b.group_id, array_agg(DISTINCT v ORDER BY v) AS sources FROM unnest(batch) b, unnest(b.sources) v GROUP BY 1
  ), old AS (
    SELECT g.id, g.status, g.unresolved_count, (g.id = ANY (created)) AS is_new, k.*, q.queues, s.sources
      FROM error_groups g JOIN k ON k.group_id = g.id LEFT JOIN q ON q.group_id = g.id LEFT JOIN s ON s.group_id = g.id
  ), moved AS (
    UPDATE error_groups g
       SET total_count = greatest(0, g.total_count + o.total),
           unresolved_count = greatest(0, g.unresolved_count + o.unresolved),
           trend_count = g.trend_count + o.recent,
           first_seen = least(g.first_seen, coalesce(o.first_seen, g.first_seen)),
           last_seen = greatest(g.last_seen, coalesce(o.last_seen, g.last_seen)),
           queues = CASE WHEN o.queues IS NULL OR o.queues <@ g.queues THEN g.queues ELSE lazarus_array_union(g.queues, o.queues) END,
           sources = CASE WHEN o.sources IS NULL OR o.sources <@ g.sources THEN g.sources ELSE lazarus_array_union(g.sources, o.sources) END,
           status = CASE
             WHEN o.is_new THEN g.status
             WHEN g.status = 'RESOLVED' AND (o.failures > 0 OR o.requeued > 0) AND g.unresolved_count + o.unresolved > 0 THEN 'OPEN'
             WHEN g.status IN ('OPEN', 'ACKNOWLEDGED') AND g.unresolved_count + o.unresolved <= 0 THEN 'RESOLVED'
             ELSE g.status END::"ErrorGroupStatus",
           regressed_at = CASE
             WHEN NOT o.is_new AND g.status = 'RESOLVED' AND o.failures > 0 AND g.unresolved_count + o.unresolved > 0 THEN now()
             ELSE g.regressed_at END,
           updated_at = now()
      FROM old o
     WHERE g.id = o.id
    RETURNING g.id, o.status AS from_status, g.status AS to_status, o.failures
  ), hours AS (
    INSERT INTO error_group_hours AS h (group_id, bucket, count)
    SELECT group_id, bucket, sum(total) FROM unnest(batch) GROUP BY 1, 2 HAVING sum(total) <> 0 ORDER BY 1, 2
    ON CONFLICT (group_id, bucket) DO UPDATE SET count = h.count + excluded.count
  ), history AS (
    INSERT INTO error_group_actions (group_id, from_status, to_status, actor, reason)
    SELECT id, from_status, to_status, 'system',
           CASE WHEN to_status = 'RESOLVED' THEN 'no unresolved members'
                WHEN failures > 0 THEN 'regressed: a new failure'
                ELSE 'a member is unresolved again' END
      FROM moved WHERE from_status <> to_status
  )
  SELECT count(*), coalesce(array_agg(id) FILTER (WHERE from_status = 'RESOLVED' AND to_status = 'OPEN' AND failures > 0), '{}')
    INTO changed, regressed FROM moved;

  -- A RESOLVED group with a new failure regressed (IGNORED groups never move, so never alert).
  PERFORM lazarus_raise_alert('REGRESSION', 'group:' || g.id,
            format('Error group regressed: %s %s: %s', g.event_type, g.error_kind, g.signature),
            jsonb_build_object('groupId', g.id::text, 'eventType', g.event_type, 'errorKind', g.error_kind, 'signature', g.signature,
                               'regressedAt', g.regressed_at, 'unresolved', g.unresolved_count))
     FROM error_groups g WHERE g.id = ANY (regressed);
END $$;

CREATE FUNCTION "tg_error_groups__notify"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Identical payloads coalesce within a transaction: one hint per fold or move, at its commit.
  PERFORM pg_notify('lazarus_error_groups', '');
  RETURN NULL;
END $$;

CREATE TRIGGER "tg_error_groups__notify" AFTER INSERT OR UPDATE ON "error_groups"
  FOR EACH STATEMENT EXECUTE FUNCTION "tg_error_groups__notify"();
