-- Since the queue-state split, the state columns of dead_letters keep the values an event was
-- recorded with, while its current state lives in dead_letter_states. Someone reading the table in
-- psql sees these comments with \d+ (and in most database tools): they say where to look instead.
COMMENT ON TABLE "dead_letters" IS
  'What is written once per failed event. Its current queue state (status, attempts, next attempt, lease, resolution, version) is in dead_letter_states (same id); the view lazarus_dead_letters shows both.';
COMMENT ON COLUMN "dead_letters"."status" IS
  'The status the event was RECORDED with, never updated. Current status: dead_letter_states.status, or lazarus_dead_letters.status.';
COMMENT ON COLUMN "dead_letters"."attempts" IS
  'Attempts at insert, never updated. Current: dead_letter_states.attempts, or lazarus_dead_letters.';
COMMENT ON COLUMN "dead_letters"."next_attempt_at" IS
  'First due time as inserted, never updated. Current: dead_letter_states.next_attempt_at, or lazarus_dead_letters.';
COMMENT ON COLUMN "dead_letters"."lease_owner" IS 'As inserted, never updated. Current lease: dead_letter_states, or lazarus_dead_letters.';
COMMENT ON COLUMN "dead_letters"."lease_token" IS 'As inserted, never updated. Current lease: dead_letter_states, or lazarus_dead_letters.';
COMMENT ON COLUMN "dead_letters"."lease_expires_at" IS 'As inserted, never updated. Current lease: dead_letter_states, or lazarus_dead_letters.';
COMMENT ON COLUMN "dead_letters"."resolved_at" IS 'As inserted, never updated. Current resolution: dead_letter_states, or lazarus_dead_letters.';
COMMENT ON COLUMN "dead_letters"."resolved_by" IS 'As inserted, never updated. Current resolution: dead_letter_states, or lazarus_dead_letters.';
COMMENT ON COLUMN "dead_letters"."resolution_reason" IS 'As inserted, never updated. Current resolution: dead_letter_states, or lazarus_dead_letters.';
COMMENT ON TABLE "dead_letter_states" IS
  'The current queue state of each event in dead_letters (same id), written by the retry engine and operator actions.';
