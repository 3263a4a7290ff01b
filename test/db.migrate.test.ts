import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { checksumOf, migrate, MigrationError, readMigrations, retryDelayMs } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from './helpers/databases.ts';
import { waitFor } from './helpers/faults.ts';
import { copyOfMigrations } from './helpers/migrations.ts';
import { ledgersAndScans } from './helpers/rollups.ts';

const adminUrl = inject('adminUrl');
const created: string[] = [];
const tempDirs: string[] = [];

async function emptyDatabase(): Promise<string> {
  const name = randomDatabaseName('lazarus_m');
  created.push(name);
  return createDatabase(adminUrl, name);
}

async function migrationsCopy(): Promise<string> {
  const dir = await copyOfMigrations();
  tempDirs.push(dir);
  return dir;
}

/** A folder of two migrations: a table, then an ALTER of it (added by `addAlter`). */
async function tableThenAlter(): Promise<{ dir: string; addAlter: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'lazarus-migrations-'));
  tempDirs.push(dir);
  await mkdir(join(dir, '20000101000000_table'));
  await writeFile(join(dir, '20000101000000_table', 'migration.sql'), 'create table events (id serial primary key, body text);\n');
  return {
    dir,
    async addAlter() {
      await mkdir(join(dir, '20000102000000_alter'));
      await writeFile(join(dir, '20000102000000_alter', 'migration.sql'), 'alter table events add column note text;\n');
    },
  };
}

async function connected(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/** A logger whose `warn` calls are kept, with a promise for the first one. */
function recordingLogger() {
  const warnings: Array<Record<string, unknown>> = [];
  let firstWarning!: () => void;
  const warned = new Promise<void>((resolve) => (firstWarning = resolve));
  return {
    warnings,
    warned,
    logger: { info: () => {}, warn: (fields: Record<string, unknown>) => { warnings.push(fields); firstWarning(); } },
  };
}

async function migrationRows(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query(
      'select migration_name, checksum, finished_at, applied_steps_count, logs, rolled_back_at from _prisma_migrations order by started_at',
    );
    return result.rows;
  } finally {
    await client.end();
  }
}

afterEach(async () => {
  await Promise.all(tempDirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});
afterAll(async () => {
  for (const name of created) await dropDatabase(adminUrl, name);
});

describe('migrate', () => {
  it('applies every migration once and records it the way Prisma does', async () => {
    const url = await emptyDatabase();
    const local = await readMigrations();

    const first = await migrate(url);
    const second = await migrate(url);

    expect(first.applied).toEqual(local.map((m) => m.name));
    expect(second.applied).toEqual([]);
    const rows = await migrationRows(url);
    expect(rows).toHaveLength(local.length);
    for (const [i, row] of rows.entries()) {
      expect(row.migration_name).toBe(local[i]!.name);
      expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
      expect(row.checksum).toBe(checksumOf(local[i]!.sql));
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.applied_steps_count).toBe(1);
      expect(row.logs).toBeNull();
    }
  });

  it('migrates exactly once when two processes start against one empty database', async () => {
    const url = await emptyDatabase();

    const results = await Promise.all([migrate(url), migrate(url), migrate(url)]);

    const appliedCounts = results.map((r) => r.applied.length).sort();
    const total = (await readMigrations()).length;
    expect(appliedCounts).toEqual([0, 0, total]);
    expect(await migrationRows(url)).toHaveLength(total);
  });

  it('refuses to run when an applied migration was edited', async () => {
    const url = await emptyDatabase();
    const dir = await migrationsCopy();
    await migrate(url, { migrationsDir: dir });
    const [first] = await readMigrations(dir);
    await writeFile(join(dir, first!.name, 'migration.sql'), `${first!.sql}\n-- an innocent-looking edit\n`);

    const attempt = migrate(url, { migrationsDir: dir });

    await expect(attempt).rejects.toThrow(MigrationError);
    await expect(attempt).rejects.toThrow(/was edited after it was applied/);
  });

  it('accepts a migration whose only change is its line endings', async () => {
    const url = await emptyDatabase();
    const dir = await migrationsCopy();
    await migrate(url, { migrationsDir: dir });
    const [first] = await readMigrations(dir);
    await writeFile(join(dir, first!.name, 'migration.sql'), first!.sql.replace(/\n/g, '\r\n'));

    await expect(migrate(url, { migrationsDir: dir })).resolves.toEqual({ applied: [] });
  });

  it('records a failed migration, rolls its changes back, and refuses to start until it is resolved', async () => {
    const url = await emptyDatabase();
    const dir = await migrationsCopy();
    await mkdir(join(dir, '29990101000000_broken'));
    await writeFile(
      join(dir, '29990101000000_broken', 'migration.sql'),
      'create table half_done (id int);\nselect no_such_function();\n',
    );

    await expect(migrate(url, { migrationsDir: dir })).rejects.toThrow(/migration 29990101000000_broken failed/);

    const broken = (await migrationRows(url)).find((r) => r.migration_name === '29990101000000_broken');
    expect(broken).toMatchObject({ finished_at: null, applied_steps_count: 0 });
    expect(broken!.logs).toMatch(/no_such_function/);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const table = await client.query(`select to_regclass('half_done') as t`);
    await client.end();
    expect(table.rows[0].t).toBeNull();
    await expect(migrate(url, { migrationsDir: dir })).rejects.toThrow(/failed earlier and was not resolved/);
  });

  // Migrations that add rollups backfill them from the rows already there, under a lock.
  it('backfills both rollup ledgers from a populated table exactly', async () => {
    const url = await emptyDatabase();
    const dir = await migrationsCopy();
    // The database as it stood before the rollups migration: it and everything after it are not there yet.
    for (const name of await readdir(dir)) {
      if (name >= '20261122130000') await rm(join(dir, name), { recursive: true });
    }
    await migrate(url, { migrationsDir: dir });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`
        insert into dead_letters (event_type, queue, error_kind, error_message, status, attempts, created_at, next_attempt_at)
        select (array['a', 'b'])[1 + g % 2], 'q' || (g % 3), (array['TIMEOUT', 'CRASH']::"ErrorKind"[])[1 + g % 2],
               'boom ' || (g % 7) || case when g % 3 = 0 then ' at x' else '' end,
               (array['PENDING', 'SUCCEEDED', 'EXHAUSTED']::"DeadLetterStatus"[])[1 + g % 3], g % 5,
               now() - g * interval '1 minute', now()
          from generate_series(1, 600) g`);
      await migrate(url);
      const { rollups, scan, signatures, signatureScan } = await ledgersAndScans(client);
      expect(rollups).toEqual(scan);
      expect(signatureScan.length).toBeGreaterThan(10);
      expect(signatures).toEqual(signatureScan);
      // One row per group in each ledger: nothing to fold, no group summing to zero.
      const rowsOf = async (table: string) => (await client.query(`select count(*)::int as n from ${table}`)).rows[0].n;
      expect(await rowsOf('dead_letter_rollups')).toBe(scan.length);
      expect(await rowsOf('dead_letter_signature_rollups')).toBe(signatureScan.length);
    } finally {
      await client.end();
    }
  });

  // A waiting ACCESS EXCLUSIVE request queues every later INSERT behind it: without lock_timeout the
  // ALTER below would wait for the reader, and the producer's INSERT would wait for the ALTER.
  it('lets producers insert while a migration waits for a reader, and applies it once when the reader ends', async () => {
    const url = await emptyDatabase();
    const { dir, addAlter } = await tableThenAlter();
    await migrate(url, { migrationsDir: dir });
    await addAlter();
    const reader = await connected(url);
    const producer = await connected(url);
    const log = recordingLogger();
    try {
      await reader.query('begin');
      await reader.query('lock table events in access share mode');

      let settled = false;
      const migration = migrate(url, { migrationsDir: dir, ddlLockTimeoutMs: 200, logger: log.logger });
      void migration.then(() => (settled = true), () => (settled = true));
      await waitFor(async () => (await producer.query(
        `select 1 from pg_stat_activity where datname = current_database() and application_name = 'lazarus-migrate' and wait_event_type = 'Lock'`)).rowCount === 1, 20_000, 'the migration waiting for its lock');
      const inserted = await producer.query(`insert into events (body) values ('while migrating') returning id`);
      await log.warned;

      expect(inserted.rows).toHaveLength(1);
      expect(settled).toBe(false);
      expect(log.warnings[0]).toMatchObject({ migration: '20000102000000_alter', attempt: 1, lockTimeoutMs: 200 });
      const readerPid = (await reader.query('select pg_backend_pid() as pid')).rows[0].pid;
      expect(log.warnings[0]!.holders).toContainEqual(expect.objectContaining({ pid: readerPid, relation: 'events', mode: 'AccessShareLock' }));

      await reader.query('commit');
      await expect(migration).resolves.toEqual({ applied: ['20000102000000_alter'] });
      const rows = await migrationRows(url);
      expect(rows.map((r) => [r.migration_name, r.finished_at instanceof Date, r.logs])).toEqual([
        ['20000101000000_table', true, null],
        ['20000102000000_alter', true, null],
      ]);
      const columns = await producer.query(`select column_name from information_schema.columns where table_name = 'events' order by ordinal_position`);
      expect(columns.rows.map((r) => r.column_name)).toEqual(['id', 'body', 'note']);
    } finally {
      await Promise.all([reader.end(), producer.end()]);
    }
  });

  it('gives up on a migration that cannot take its locks without recording a failure, so the next start-up applies it', async () => {
    const url = await emptyDatabase();
    const { dir, addAlter } = await tableThenAlter();
    await migrate(url, { migrationsDir: dir });
    await addAlter();
    const reader = await connected(url);
    try {
      await reader.query('begin');
      await reader.query('lock table events in access share mode');

      const attempt = migrate(url, { migrationsDir: dir, ddlLockTimeoutMs: 50, ddlRetryForMs: 0 });

      await expect(attempt).rejects.toThrow(MigrationError);
      await expect(attempt).rejects.toThrow(/migration 20000102000000_alter could not take its locks: 1 attempts .*nothing was applied.*"relation":"events"/);
      expect((await migrationRows(url)).map((r) => r.migration_name)).toEqual(['20000101000000_table']);
      await reader.query('commit');
      await expect(migrate(url, { migrationsDir: dir })).resolves.toEqual({ applied: ['20000102000000_alter'] });
    } finally {
      await reader.end();
    }
  });
});

describe('retryDelayMs', () => {
  it('doubles from 250 ms up to 10 s, jittered within the upper half', () => {
    expect([1, 2, 3, 6, 7, 20].map((a) => retryDelayMs(a, 0.999999))).toEqual([250, 500, 1000, 8000, 10000, 10000]);
    expect([1, 2, 7].map((a) => retryDelayMs(a, 0))).toEqual([125, 250, 5000]);
  });
});
