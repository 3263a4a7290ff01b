// A throwaway database for a bench: created on the admin URL, migrated, one connected client, and
// dropped afterwards whatever happens. A failure inside is printed and sets exit code 1, so the
// drop still runs and the bench still fails.
import pg from 'pg';
import { pino } from 'pino';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from '../test/helpers/databases.ts';

export interface ScratchDatabase {
  url: string;
  /** Connected; ended before the drop. */
  client: pg.Client;
}

/** Runs `work` on a fresh database migrated with `migrationsDir` (default: every migration), then drops it. */
export async function inScratchDatabase(
  adminUrl: string, work: (db: ScratchDatabase) => Promise<void>, options: { migrationsDir?: string } = {},
): Promise<void> {
  const name = randomDatabaseName('lazarus_bench');
  const url = await createDatabase(adminUrl, name);
  const client = new pg.Client({ connectionString: url });
  // The drop WITH (FORCE) may reach the client while it is still ending.
  client.on('error', () => {});
  try {
    await migrate(url, { logger: pino({ level: 'silent' }), migrationsDir: options.migrationsDir });
    await client.connect();
    await work({ url, client });
  } catch (error) {
    console.error(error);
    process.exitCode = 1;
  } finally {
    await client.end().catch(() => {});
    await dropDatabase(adminUrl, name);
  }
}
