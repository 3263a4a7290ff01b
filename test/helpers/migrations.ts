import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, inject } from 'vitest';
import { DEFAULT_MIGRATIONS_DIR, migrate } from '../../src/db/migrate.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from './databases.ts';

/**
 * A temporary copy of the migrations folder holding only the entries `keep` accepts (migration
 * folders sort by their timestamps, so `(m) => m < '2026…_name'` is "every migration before that
 * one"). For tests that start a database at an earlier schema; the caller removes the folder.
 */
export async function copyOfMigrations(keep: (entry: string) => boolean = () => true): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lazarus-migrations-'));
  await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
  for (const entry of await readdir(dir)) if (!keep(entry)) await rm(join(dir, entry), { recursive: true });
  return dir;
}

/**
 * For a migration's own test: `create()` makes a scratch database at the schema just before
 * `migration` (every earlier one applied) and returns its URL; the test fills it, then upgrades it
 * with `migrate(url)`. The database and the folder are removed after the file's tests.
 */
export function useDatabaseBefore(migration: string): { create: () => Promise<string> } {
  const adminUrl = inject('adminUrl');
  const name = randomDatabaseName('lazarus_m');
  let dir = '';
  afterAll(async () => {
    await dropDatabase(adminUrl, name);
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  return {
    async create() {
      const url = await createDatabase(adminUrl, name);
      dir = await copyOfMigrations((entry) => entry < migration);
      await migrate(url, { migrationsDir: dir });
      return url;
    },
  };
}
