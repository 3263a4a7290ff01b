// Applies prisma/migrations the way `prisma migrate deploy` does, without Prisma's native engine:
// same advisory lock (72707369), same `_prisma_migrations` table and checksums, so the service and
// Prisma's CLI agree on what is applied. Each migration runs in its own transaction (stricter than
// Prisma, which does not wrap scripts); a failure is still recorded the way Prisma records it, so
// later start-ups refuse to run until someone resolves it.
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Logger } from '../logger.ts';

/** Prisma Migrate's advisory lock key; taking the same one serialises us with it. */
export const MIGRATION_LOCK_KEY = 72707369;
export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));
const DEFAULT_LOCK_TIMEOUT_MS = 300_000;

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
        await applyOne(client, migration);
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

async function applyOne(client: pg.Client, migration: LocalMigration): Promise<void> {
  const id = randomUUID();
  await client.query(
    `insert into _prisma_migrations (id, checksum, migration_name, started_at, applied_steps_count)
     values ($1, $2, $3, now(), 0)`,
    [id, migration.checksum, migration.name],
  );
  try {
    await client.query('begin');
    await client.query(migration.sql);
    await client.query(
      'update _prisma_migrations set finished_at = now(), applied_steps_count = 1 where id = $1',
      [id],
    );
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    const message = error instanceof Error ? error.message : String(error);
    await client.query('update _prisma_migrations set logs = $2 where id = $1', [id, message]);
    throw new MigrationError(`migration ${migration.name} failed: ${message}`, { cause: error });
  }
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
