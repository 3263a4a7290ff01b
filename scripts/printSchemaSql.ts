// Writes prisma/schema.sql: the database after every migration, as one pg_dump --schema-only. The
// migrations redefine the same functions many times; this file shows each table, view, trigger and
// function once, as it stands. With --check, fails when the committed file is stale.
//
// Server: SCHEMA_DATABASE_URL, TEST_DATABASE_URL or BENCH_DATABASE_URL (an admin URL: a scratch
// database is created, migrated, dumped and dropped); else the machine's PostgreSQL at
// 127.0.0.1:5432 if it answers; else a throwaway embedded PostgreSQL. pg_dump (PG_DUMP, default the
// one on PATH) refuses a server newer than itself, so the embedded PostgreSQL 18 needs a pg_dump 18.
// The output is normalised so the same schema prints the same text whatever versions made it.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { adminQuery, createDatabase, dropDatabase, randomDatabaseName } from '../test/helpers/databases.ts';
import { startEmbedded, type TestServer } from '../test/helpers/postgres.ts';

const OUTPUT = fileURLToPath(new URL('../prisma/schema.sql', import.meta.url));
const DEFAULT_ADMIN_URL = 'postgresql://postgres@127.0.0.1:5432/postgres';
const HEADER = [
  '-- The Lazarus database after every migration in prisma/migrations, printed by',
  '-- `npm run schema:sql` (scripts/printSchemaSql.ts) with pg_dump --schema-only. Generated: edit a',
  '-- migration, not this file. The migrator\'s own _prisma_migrations table is left out.',
  '',
].join('\n');

const server = await findServer();
const name = randomDatabaseName('lazarus_schema_sql');
let text: string;
try {
  const url = await createDatabase(server.adminUrl, name);
  try {
    await migrate(url);
    text = HEADER + normalise(await dump(url));
  } finally {
    await dropDatabase(server.adminUrl, name);
  }
} finally {
  await server.stop();
}

if (process.argv.includes('--check')) {
  if ((await readFile(OUTPUT, 'utf8').catch(() => '')) !== text) {
    process.stderr.write(`${OUTPUT} is stale: run \`npm run schema:sql\` and commit the result\n`);
    process.exit(1);
  }
  process.stdout.write('prisma/schema.sql is up to date\n');
} else {
  await writeFile(OUTPUT, text);
  process.stdout.write(`wrote ${OUTPUT}\n`);
}

async function findServer(): Promise<TestServer> {
  const configured = process.env.SCHEMA_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? process.env.BENCH_DATABASE_URL;
  if (configured) return { adminUrl: configured, kind: 'external', stop: async () => {} };
  if (await answers(DEFAULT_ADMIN_URL)) return { adminUrl: DEFAULT_ADMIN_URL, kind: 'external', stop: async () => {} };
  return startEmbedded();
}

async function answers(url: string): Promise<boolean> {
  try {
    await adminQuery(url, 'select 1');
    return true;
  } catch {
    return false;
  }
}

async function dump(url: string): Promise<string> {
  const pgDump = process.env.PG_DUMP ?? 'pg_dump';
  try {
    const { stdout } = await promisify(execFile)(
      pgDump,
      ['--schema-only', '--no-owner', '--no-privileges', '--exclude-table=public._prisma_migrations', '--dbname', url],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    return stdout;
  } catch (error) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ server_version: string }>('show server_version').finally(() => client.end());
    throw new Error(
      `${pgDump} failed against PostgreSQL ${rows[0]!.server_version} (pg_dump refuses a server newer than itself: ` +
        'set SCHEMA_DATABASE_URL to an older server or PG_DUMP to a newer pg_dump)',
      { cause: error },
    );
  }
}

/** Drops what changes between runs and versions: pg_dump's random \restrict key, version lines, session SETs. */
function normalise(text: string): string {
  const lines = text
    .split('\n')
    .filter((line) => !/^\\(un)?restrict /.test(line))
    .filter((line) => !/^-- Dumped (from database|by pg_dump) version/.test(line))
    .filter((line) => !/^SET |^SELECT pg_catalog\.set_config\('search_path'/.test(line));
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trim()}\n`;
}
