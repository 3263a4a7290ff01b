import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_MIGRATIONS_DIR } from '../../src/db/migrate.ts';

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
