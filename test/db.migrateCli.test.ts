import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { readMigrations } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from './helpers/databases.ts';

const CLI = fileURLToPath(new URL('../src/db/migrateCli.ts', import.meta.url));
const adminUrl = inject('adminUrl');
const name = randomDatabaseName('lazarus_cli');

function runCli(databaseUrl: string): Promise<{ code: number | null; lines: Record<string, unknown>[] }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI], { env: { ...process.env, DATABASE_URL: databaseUrl, LOG_FORMAT: 'json' } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    // 'close', not 'exit': 'exit' can come before the last of the child's output has been read.
    child.on('close', (code) => resolve({ code, lines: out.split('\n').filter(Boolean).map((l) => JSON.parse(l)) }));
  });
}

afterAll(async () => {
  await dropDatabase(adminUrl, name);
});

describe('npm run db:migrate', () => {
  it('applies pending migrations once, then reports the database up to date', async () => {
    const url = await createDatabase(adminUrl, name);
    const total = (await readMigrations()).length;

    const first = await runCli(url);
    const second = await runCli(url);

    expect(first.code).toBe(0);
    expect(first.lines.at(-1)).toMatchObject({ msg: `applied ${total} migration(s)` });
    expect(second.code).toBe(0);
    expect(second.lines.at(-1)).toMatchObject({ msg: 'database is up to date', applied: [] });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query('select count(*)::int as n from _prisma_migrations where finished_at is not null');
    await client.end();
    expect(rows[0].n).toBe(total);
  });

  it('exits 1 with one line when the database cannot be reached', async () => {
    const result = await runCli('postgresql://postgres@127.0.0.1:1/nowhere');
    expect(result.code).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]!.msg).toMatch(/cannot connect to PostgreSQL at 127.0.0.1:1\/nowhere/);
  });
});
