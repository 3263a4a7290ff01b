-- Per-principal request counters for rate limiting, shared by every instance through the
-- database. One row per principal and fixed one-minute window; old windows are deleted as new
-- ones are written.
-- UNLOGGED: counters are worth nothing after a crash (a fresh window is the right answer then),
-- and skipping the WAL keeps the extra write per mutation cheap. Prisma cannot say UNLOGGED, so
-- the model in schema.prisma describes the columns only.
CREATE UNLOGGED TABLE "rate_limit_windows" (
    "principal" TEXT NOT NULL,
    "window_start" TIMESTAMPTZ(6) NOT NULL,
    "count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "rate_limit_windows_pkey" PRIMARY KEY ("principal", "window_start")
);
