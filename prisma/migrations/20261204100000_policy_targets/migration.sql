-- A retry policy's delivery target becomes a kind plus that kind's settings (issue 33): the webhook is
-- the first kind, and a broker kind (amqp, nats, redis…) is one file and a registry line in
-- src/workers/targets, not a new column, CHECK, claim test, GraphQL field and form field each.
--
-- target_kind null means "no target": events of the type are held PENDING (unless an in-process
-- handler exists), as target_url null did. target_settings is the kind's settings object as its
-- parser accepts it; the webhook's are { "url": "https://…", "secret": "…" (optional) }.
--
-- Backfilled here, in the migration's own transaction: retry_policies has one row per event type,
-- so the table is small and the update is short. A secret stored without a URL (never sent: there
-- was no target) is not carried over. allow_private_target stays a policy column: the SSRF switch
-- applies to the host of every network kind, not only the webhook's.
--
-- Expand, not contract (docs/migrations.md): target_url and signing_secret stay for one release, so
-- that processes of the previous release, still running during a rolling upgrade, keep claiming
-- and delivering. A row trigger keeps them a mirror of the webhook kind (NULL for any other kind,
-- which those processes then hold for a newer one), and turns a change an old process makes to
-- them into the webhook kind. So a psql reader never finds a URL there that is not the target. A
-- later migration drops both columns and the trigger.

ALTER TABLE "retry_policies"
  ADD COLUMN "target_kind" TEXT,
  ADD COLUMN "target_settings" JSONB;

UPDATE "retry_policies"
   SET "target_kind" = 'webhook',
       "target_settings" = jsonb_strip_nulls(jsonb_build_object('url', "target_url", 'secret', "signing_secret"))
 WHERE "target_url" IS NOT NULL;
-- The mirror below holds no secret without a webhook target.
UPDATE "retry_policies" SET "signing_secret" = NULL WHERE "target_url" IS NULL AND "signing_secret" IS NOT NULL;

CREATE FUNCTION "tg_retry_policies__webhook_columns"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A writer of the previous release set the webhook columns and not the target: follow them.
  IF (TG_OP = 'INSERT' AND NEW.target_kind IS NULL AND NEW.target_url IS NOT NULL)
     OR (TG_OP = 'UPDATE' AND (NEW.target_kind, NEW.target_settings) IS NOT DISTINCT FROM (OLD.target_kind, OLD.target_settings)
         AND (NEW.target_url, NEW.signing_secret) IS DISTINCT FROM (OLD.target_url, OLD.signing_secret)) THEN
    NEW.target_kind := CASE WHEN NEW.target_url IS NOT NULL THEN 'webhook' END;
    NEW.target_settings := CASE WHEN NEW.target_url IS NOT NULL
                                THEN jsonb_strip_nulls(jsonb_build_object('url', NEW.target_url, 'secret', NEW.signing_secret)) END;
  END IF;
  NEW.target_url := CASE WHEN NEW.target_kind = 'webhook' THEN NEW.target_settings ->> 'url' END;
  NEW.signing_secret := CASE WHEN NEW.target_kind = 'webhook' THEN NEW.target_settings ->> 'secret' END;
  RETURN NEW;
END $$;
CREATE TRIGGER "tg_retry_policies__webhook_columns" BEFORE INSERT OR UPDATE ON "retry_policies"
  FOR EACH ROW EXECUTE FUNCTION "tg_retry_policies__webhook_columns"();
COMMENT ON COLUMN "retry_policies"."target_url" IS 'Deprecated: the webhook kind''s url, kept in step by a trigger for processes of the previous release; NULL for other kinds. Read target_kind and target_settings.';
COMMENT ON COLUMN "retry_policies"."signing_secret" IS 'Deprecated: the webhook kind''s secret, kept in step by a trigger for processes of the previous release. Read target_settings.';

-- A kind comes with its settings, and a kind name is a plain identifier (it names a file and a
-- metric label). The kinds themselves are not listed here: the delivery path treats a kind this
-- process does not know as a failed, retried attempt, so a newer process can deliver it.
ALTER TABLE "retry_policies"
  ADD CONSTRAINT "retry_policies_target_check" CHECK (("target_kind" IS NULL) = ("target_settings" IS NULL)),
  ADD CONSTRAINT "retry_policies_target_kind_check" CHECK ("target_kind" ~ '^[a-z][a-z0-9_]{0,39}$'),
  ADD CONSTRAINT "retry_policies_target_settings_check" CHECK (jsonb_typeof("target_settings") = 'object');

-- The webhook kind's CHECK, what target_url's was: an http(s) URL of at most 2000 characters, and a
-- secret, when there is one, that is a string. The 16–500 characters of a new secret are checked on
-- save only, as before (a shorter stored secret still signs); SSRF (private hosts) on save and at
-- every delivery, not here: it depends on DNS.
ALTER TABLE "retry_policies"
  ADD CONSTRAINT "retry_policies_webhook_target_check" CHECK (
    "target_kind" IS DISTINCT FROM 'webhook' OR (
      -- coalesce: without a url every test below is null, and a CHECK lets null through.
      coalesce(jsonb_typeof("target_settings" -> 'url') = 'string'
               AND "target_settings" ->> 'url' ~ '^https?://'
               AND length("target_settings" ->> 'url') <= 2000, false)
      AND ("target_settings" -> 'secret' IS NULL OR jsonb_typeof("target_settings" -> 'secret') = 'string')));
