import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { checksumOf, migrate, MigrationError, readMigrations } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from './helpers/databases.ts';
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
});
