-- Every delivery attempt in full (issue 35): what Lazarus sent (the target, host only; the request
-- headers with secrets redacted; the body's size and SHA-256), what came back (the response headers
-- beside the status and the body excerpt already kept, and whether that excerpt was cut), why the
-- delivery failed (failure_kind) and which rule made the attempt the last (permanent_reason).
--
-- Bounded: the writer (src/domain/attemptDetails.ts) caps each field, and the CHECKs below hold
-- every other writer to the same caps, so an attempt's new columns take at most ~3.4 kB whatever a
-- receiver answers (docs/reading.md#delivery-attempts has the whole row's bound).
--
-- Expand only (docs/migrations.md): nullable columns and new enum types are catalog changes, with
-- no table rewrite; the CHECKs are NOT VALID (no scan under the lock; every existing row is NULL
-- in these columns anyway). Processes of the previous release keep inserting attempts without them.

CREATE TYPE "DeliveryFailureKind" AS ENUM ('UNREACHABLE', 'REJECTED', 'TIMEOUT', 'INVALID_TARGET');
CREATE TYPE "PermanentReason" AS ENUM ('PERMANENT_STATUS_CODE', 'PERMANENT_ERROR_KIND', 'PERMANENT_ERROR', 'INVALID_TARGET', 'MAX_ATTEMPTS');

ALTER TABLE "delivery_attempts"
  ADD COLUMN "failure_kind" "DeliveryFailureKind",
  ADD COLUMN "permanent_reason" "PermanentReason",
  ADD COLUMN "target" TEXT,
  ADD COLUMN "request_headers" JSONB,
  ADD COLUMN "request_body_bytes" INTEGER,
  ADD COLUMN "request_body_sha256" TEXT,
  ADD COLUMN "response_headers" JSONB,
  ADD COLUMN "response_body_truncated" BOOLEAN,
  ADD CONSTRAINT "delivery_attempts_target_size" CHECK (octet_length("target") <= 256) NOT VALID,
  ADD CONSTRAINT "delivery_attempts_request_headers_size"
    CHECK (jsonb_typeof("request_headers") = 'object' AND octet_length("request_headers"::text) <= 1024) NOT VALID,
  ADD CONSTRAINT "delivery_attempts_response_headers_size"
    CHECK (jsonb_typeof("response_headers") = 'object' AND octet_length("response_headers"::text) <= 2048) NOT VALID,
  ADD CONSTRAINT "delivery_attempts_request_body" CHECK ("request_body_bytes" >= 0 AND "request_body_sha256" ~ '^[0-9a-f]{64}$') NOT VALID;
