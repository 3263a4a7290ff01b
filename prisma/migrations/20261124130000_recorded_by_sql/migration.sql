-- Every event's story starts with RECORDED, however it was written.
--
-- The service writes the RECORDED history row in its own ingest statement, with the API key's name
-- as the actor. A row written by a plain SQL INSERT got none, so its timeline started at its first
-- attempt. This statement trigger writes RECORDED for every inserted row that has none yet (the
-- service's rows already have theirs: AFTER triggers run at the end of the whole statement, so
-- they see its CTEs' inserts), with the actor `sql:<the database role>` and the row's created_at.
-- One index probe per row on dead_letter_actions_dead_letter_idx.

CREATE FUNCTION "tg_dead_letters__recorded"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dead_letter_actions (dead_letter_id, action, actor, created_at)
  SELECT n.id, 'RECORDED', 'sql:' || session_user, n.created_at
    FROM added n
   WHERE NOT EXISTS (SELECT 1 FROM dead_letter_actions a WHERE a.dead_letter_id = n.id AND a.action = 'RECORDED');
  RETURN NULL;
END;
$$;

CREATE TRIGGER "tg_dead_letters__recorded" AFTER INSERT ON "dead_letters"
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "tg_dead_letters__recorded"();
