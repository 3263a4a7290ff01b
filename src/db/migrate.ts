// Applies prisma/migrations the way `prisma migrate deploy` does, without Prisma's native engine:
// same advisory lock (72707369), same `_prisma_migrations` table and checksums, so the service and
// Prisma's CLI agree on what is applied. Each migration runs in its own transaction (stricter than
// Prisma, which does not wrap scripts); a failure is still recorded the way Prisma records it, so
// later start-ups refuse to run until someone resolves it.
//
// Every migration runs under a short `lock_timeout` and is retried when it runs out. A lock request
// waits in a queue, and every later request that conflicts with it waits behind it: an ALTER TABLE
// (ACCESS EXCLUSIVE) stuck behind one long-running reader stops every producer's INSERT for as long
// as that reader runs. With a short timeout the ALTER steps out of the queue, producers carry on,
// and it tries again after a backoff. A lock timeout is not a failure of the migration: the
// attempt's row in `_prisma_migrations` is written in the same transaction and rolls back with it,
// so nothing blocks a later start-up. The rule for writing migrations: docs/migrations.md.
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { DEFAULT_MIGRATION_LOCK_TIMEOUT_MS, DEFAULT_MIGRATION_RETRY_FOR_MS } from '../config.ts';
import type { Logger } from '../logger.ts';

/** Prisma Migrate's advisory lock key; taking the same one serialises us with it. */
export const MIGRATION_LOCK_KEY = 72707369;
export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));
const DEFAULT_LOCK_TIMEOUT_MS = 300_000;
/** Lock timeout, and the side of a deadlock PostgreSQL aborted: both leave nothing applied, so both retry. */
const RETRYABLE = new Set(['55P03', '40P01']);
const FIRST_RETRY_DELAY_MS = 250;
const MAX_RETRY_DELAY_MS = 10_000;

export class MigrationError extends Error {
  override name = 'MigrationError';
}

export interface LocalMigration {
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateOptions {
  migrationsDir?: string;
  logger?: Pick<Logger, 'info' | 'warn'>;
  /** How long to wait for another process that is migrating. Default 5 minutes. */
  lockTimeoutMs?: number;
  /** `lock_timeout` of each migration's transaction: the longest it queues for a table lock. Default 1000 ms. */
  ddlLockTimeoutMs?: number;
  /** How long a migration that keeps hitting its lock_timeout is retried before migrate fails. Default 5 minutes. */
  ddlRetryForMs?: number;
}

export interface MigrateResult {
  applied: string[];
}

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  logs: string | null;
}

/** Lowercase hex SHA-256 of migration.sql, as Prisma records it. */
export function checksumOf(sql: string): string {
  return createHash('sha256').update(sql).digest('hex');
}

export async function readMigrations(dir = DEFAULT_MIGRATIONS_DIR): Promise<LocalMigration[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: checksumOf(sql) };
    }),
  );
}

/** Applies pending migrations under the advisory lock; refuses on edited or failed ones. */
export async function migrate(databaseUrl: string, options: MigrateOptions = {}): Promise<MigrateResult> {
  const local = await readMigrations(options.migrationsDir);
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'lazarus-migrate' });
  await client.connect();
  try {
    await takeLock(client, options);
    try {
      await client.query(CREATE_MIGRATIONS_TABLE);
      const applied = await readApplied(client);
      verifyHistory(local, applied, options.logger);
      const appliedNames = new Set(applied.map((row) => row.migration_name));
      const pending = local.filter((m) => !appliedNames.has(m.name));
      for (const migration of pending) {
        await applyWithRetries(client, migration, options);
        options.logger?.info({ migration: migration.name }, 'applied migration');
      }
      return { applied: pending.map((m) => m.name) };
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await client.end();
  }
}

/** Names of local migrations not yet applied (for readiness checks). */
export async function pendingMigrations(client: pg.ClientBase | pg.Pool, migrationsDir?: string): Promise<string[]> {
  const local = await readMigrations(migrationsDir);
  const exists = await client.query<{ ok: boolean }>(`select to_regclass('_prisma_migrations') is not null as ok`);
  if (!exists.rows[0]?.ok) return local.map((m) => m.name);
  const done = await client.query<{ migration_name: string }>(
    'select migration_name from _prisma_migrations where finished_at is not null and rolled_back_at is null',
  );
  const names = new Set(done.rows.map((r) => r.migration_name));
  return local.filter((m) => !names.has(m.name)).map((m) => m.name);
}

async function takeLock(client: pg.Client, options: MigrateOptions): Promise<void> {
  const got = await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1) as ok', [MIGRATION_LOCK_KEY]);
  if (got.rows[0]?.ok) return;
  options.logger?.info('another process is migrating this database; waiting for it');
  // lock_timeout bounds the wait: a stuck migrator elsewhere becomes an error here, not a hang.
  await client.query(`select set_config('lock_timeout', $1, false)`, [`${options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS}ms`]);
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  } catch (error) {
    throw new MigrationError('timed out waiting for the migration lock held by another process', { cause: error });
  } finally {
    await client.query(`select set_config('lock_timeout', '0', false)`);
  }
}

async function readApplied(client: pg.Client): Promise<AppliedRow[]> {
  const result = await client.query<AppliedRow>(
    `select migration_name, checksum, finished_at, logs from _prisma_migrations
      where rolled_back_at is null order by started_at, migration_name`,
  );
  return result.rows;
}

function verifyHistory(local: LocalMigration[], applied: AppliedRow[], logger: MigrateOptions['logger']): void {
  const byName = new Map(local.map((m) => [m.name, m]));
  for (const row of applied) {
    if (row.finished_at === null) {
      throw new MigrationError(
        `migration ${row.migration_name} failed earlier and was not resolved` +
          (row.logs ? ` (${firstLine(row.logs)})` : '') +
          `; repair the database, then mark it with \`prisma migrate resolve --rolled-back ${row.migration_name}\`` +
          ` or set rolled_back_at on its _prisma_migrations row`,
      );
    }
    const mine = byName.get(row.migration_name);
    if (!mine) {
      logger?.warn({ migration: row.migration_name }, 'database has a migration that is not in prisma/migrations');
    } else if (!checksumMatches(mine.sql, row.checksum)) {
      throw new MigrationError(
        `migration ${row.migration_name} was edited after it was applied (checksum ${row.checksum.slice(0, 12)}… ` +
          `in the database, ${mine.checksum.slice(0, 12)}… on disk); restore the original file and add a new migration instead`,
      );
    }
  }
}

/** Prisma also accepts the file with its line endings flipped (checked out on another OS). */
function checksumMatches(sql: string, recorded: string): boolean {
  const variants = [sql, sql.replace(/\r\n/g, '\n'), sql.replace(/(?<!\r)\n/g, '\r\n')];
  return variants.some((v) => checksumOf(v) === recorded);
}

async function applyWithRetries(client: pg.Client, migration: LocalMigration, options: MigrateOptions): Promise<void> {
  const lockTimeoutMs = options.ddlLockTimeoutMs ?? DEFAULT_MIGRATION_LOCK_TIMEOUT_MS;
  const retryForMs = options.ddlRetryForMs ?? DEFAULT_MIGRATION_RETRY_FOR_MS;
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    const error = await applyOne(client, migration, lockTimeoutMs);
    if (!error) return;
    const message = error instanceof Error ? error.message : String(error);
    if (!isLockTimeout(error)) {
      await client.query(
        `insert into _prisma_migrations (id, checksum, migration_name, started_at, applied_steps_count, logs)
         values ($1, $2, $3, now(), 0, $4)`,
        [randomUUID(), migration.checksum, migration.name, message],
      );
      throw new MigrationError(`migration ${migration.name} failed: ${message}`, { cause: error });
    }
    const holders = await lockHolders(client, lockTimeoutMs);
    const elapsedMs = Date.now() - started;
    if (elapsedMs >= retryForMs) {
      throw new MigrationError(
        `migration ${migration.name} could not take its locks: ${attempt} attempts over ${Math.round(elapsedMs / 1000)} s, ` +
          `each given up after ${lockTimeoutMs} ms (lock_timeout); nothing was applied and the next start-up tries again. ` +
          `Sessions holding table locks longer than that: ${holders.length ? JSON.stringify(holders) : 'none now'}`,
        { cause: error },
      );
    }
    const delayMs = Math.min(retryDelayMs(attempt, Math.random()), retryForMs - elapsedMs);
    options.logger?.warn(
      { migration: migration.name, attempt, lockTimeoutMs, retryInMs: delayMs, holders },
      'migration timed out waiting for a lock; rolled back, retrying',
    );
    await sleep(delayMs);
  }
}

/** Exponential backoff from 250 ms to 10 s, with jitter in [half, whole) so instances do not retry in step. */
export function retryDelayMs(attempt: number, random: number): number {
  const ceiling = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** (attempt - 1));
  return Math.round(ceiling * (0.5 + random / 2));
}

/** One attempt in one transaction, its `_prisma_migrations` row included. Returns the error it rolled back on. */
async function applyOne(client: pg.Client, migration: LocalMigration, lockTimeoutMs: number): Promise<unknown> {
  const id = randomUUID();
  try {
    await client.query('begin');
    await client.query(`select set_config('lock_timeout', $1, true)`, [`${lockTimeoutMs}ms`]);
    await client.query(
      `insert into _prisma_migrations (id, checksum, migration_name, started_at, applied_steps_count)
       values ($1, $2, $3, now(), 0)`,
      [id, migration.checksum, migration.name],
    );
    await client.query(migration.sql);
    await client.query('update _prisma_migrations set finished_at = now(), applied_steps_count = 1 where id = $1', [id]);
    await client.query('commit');
    return null;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    return error;
  }
}

function isLockTimeout(error: unknown): boolean {
  return RETRYABLE.has(String((error as { code?: unknown } | null)?.code));
}

interface LockHolder {
  pid: number;
  application: string;
  relation: string;
  mode: string;
  transactionSeconds: number;
  query: string;
}

// The waiting statement is gone by now, so pg_blocking_pids() has nothing to ask about. A session
// that blocked it for the whole lock_timeout has held a table lock at least that long: list those.
async function lockHolders(client: pg.Client, heldForMs: number): Promise<LockHolder[]> {
  const result = await client.query<LockHolder>(
    `select a.pid, a.application_name as application, l.relation::regclass::text as relation, l.mode,
            round(extract(epoch from now() - a.xact_start))::int as "transactionSeconds", left(a.query, 200) as query
       from pg_locks l join pg_stat_activity a on a.pid = l.pid join pg_class c on c.oid = l.relation
      where l.granted and l.locktype = 'relation' and c.relkind in ('r', 'p', 'v', 'm')
        and l.database = (select oid from pg_database where datname = current_database())
        and l.pid <> pg_backend_pid() and a.xact_start < now() - $1 * interval '1 millisecond'
      order by a.xact_start, relation limit 10`,
    [heldForMs],
  );
  return result.rows;
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}

// Prisma's own DDL (schema-engine, sql-schema-connector, postgres flavour).
const CREATE_MIGRATIONS_TABLE = `
  create table if not exists "_prisma_migrations" (
    "id"                  varchar(36) primary key not null,
    "checksum"            varchar(64) not null,
    "finished_at"         timestamptz,
    "migration_name"      varchar(255) not null,
    "logs"                text,
    "rolled_back_at"      timestamptz,
    "started_at"          timestamptz not null default now(),
    "applied_steps_count" integer not null default 0
  )`;
