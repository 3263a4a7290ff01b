-- Redrive to source (issue 34): an event may be requeued to the place it came from (its origin)
-- instead of its policy's target, and redirect rules send what would go back to one source place
-- to another.
--
-- Expand only (docs/migrations.md): a nullable column without a default and a new table write
-- nothing, so dead_letter_states' ACCESS EXCLUSIVE lock is held for milliseconds. No index: the
-- claim finds source-bound events of a type without a target through dead_letter_states_pending_type_idx.

-- dead_letter_states.deliver_to_source: true while the event waits to be delivered to its origin
-- (set by a requeue with destination SOURCE), NULL otherwise. The retry loop builds the target from
-- dead_letters.origin instead of the policy's.
LOCK TABLE "dead_letter_states" IN ACCESS EXCLUSIVE MODE;
ALTER TABLE "dead_letter_states" ADD COLUMN "deliver_to_source" BOOLEAN;
ALTER TABLE "dead_letter_states" ADD CONSTRAINT "dead_letter_states_deliver_to_source_check"
  CHECK ("deliver_to_source" IS NULL OR "deliver_to_source") NOT VALID;
COMMENT ON COLUMN "dead_letter_states"."deliver_to_source" IS
  'True while the event waits to be redriven to its origin (requeue with destination SOURCE); NULL otherwise. Cleared when it finishes.';

-- Cleared when the event reaches an end state, so that what a psql user reads is true, and a later
-- requeue (a producer's re-record, an edit-and-retry) goes to the policy unless it asks for the source.
-- The WHEN keeps it free for every other update.
CREATE FUNCTION "tg_dead_letter_states__clear_source"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.deliver_to_source := NULL;
  RETURN NEW;
END $$;
CREATE TRIGGER "tg_dead_letter_states__clear_source" BEFORE UPDATE ON "dead_letter_states"
  FOR EACH ROW WHEN (NEW."deliver_to_source" IS NOT NULL AND NEW."status" NOT IN ('PENDING', 'PROCESSING'))
  EXECUTE FUNCTION "tg_dead_letter_states__clear_source"();

-- A redrive (a large requeue) keeps where it sends its events.
ALTER TABLE "redrives" ADD COLUMN "destination" TEXT NOT NULL DEFAULT 'POLICY';
ALTER TABLE "redrives" ADD CONSTRAINT "redrives_destination_check" CHECK ("destination" IN ('POLICY', 'SOURCE'));

-- Redirects, as ServicePulse has them: what would be redriven to source `kind:from_place` (an AMQP
-- queue, a NATS subject, a Redis stream) goes to `to_place` instead, through `to_bridge`'s broker
-- (NULL: the bridge the event came through).
CREATE TABLE "source_redirects" (
  "id" BIGSERIAL PRIMARY KEY,
  "kind" TEXT NOT NULL CHECK ("kind" IN ('amqp', 'nats', 'redis')),
  "from_place" TEXT NOT NULL CHECK (length("from_place") BETWEEN 1 AND 1024),
  "to_place" TEXT NOT NULL CHECK (length("to_place") BETWEEN 1 AND 1024),
  "to_bridge" TEXT CHECK (length("to_bridge") BETWEEN 1 AND 100),
  "updated_by" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  CONSTRAINT "source_redirects_kind_from_place_key" UNIQUE ("kind", "from_place")
);
