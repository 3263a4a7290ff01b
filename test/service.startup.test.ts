// Real service processes: the start-up contract of `npm start`.
import { chmod, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { readMigrations } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from './helpers/databases.ts';
import { freePort } from './helpers/postgres.ts';
import { logLines, NPM_START, postGraphQL, runServiceToExit, startService } from './helpers/serviceProcess.ts';

const adminUrl = inject('adminUrl');
const created: string[] = [];
const tempDirs: string[] = [];
const start = startService;
const runToExit = runServiceToExit;

async function newDatabase(): Promise<string> {
  const name = randomDatabaseName('lazarus_s');
  created.push(name);
  return createDatabase(adminUrl, name);
}

async function graphql(url: string, query: string) {
  return (await postGraphQL(url, query)).body;
}

afterAll(async () => {
  for (const name of created) await dropDatabase(adminUrl, name);
  for (const dir of tempDirs) await rm(dir, { recursive: true, force: true });
});

describe('starting the service', () => {
  it('serves GraphQL, liveness and readiness on an external database, logs where the console and GraphiQL are, and exits 0 on SIGTERM', async () => {
    const service = await start({ DATABASE_URL: await newDatabase() });

    const health = await fetch(`${service.url}/health`);
    const ready = await fetch(`${service.url}/ready`);
    const data = await graphql(service.url, '{ deadLetters { totalCount } }');
    const code = await service.stop('SIGTERM');

    expect(health.status).toBe(200);
    expect(ready.status).toBe(200);
    expect(data).toEqual({ data: { deadLetters: { totalCount: 0 } } });
    expect(code).toBe(0);
    expect(logLines(service.output()).map((l) => l.msg)).toContain('stopped');
    expect(logLines(service.output()).map((l) => l.msg)).toContain(`Lazarus is running: open the console at ${service.url}/ (GraphiQL at ${service.url}/graphql)`);
  });

  it('stops the service when a supervisor sends SIGTERM to the `npm start` process it started', async () => {
    const service = await start({ DATABASE_URL: await newDatabase() }, NPM_START);
    expect((await fetch(`${service.url}/health`)).status).toBe(200);

    const code = await service.stop('SIGTERM');

    expect(code).toBe(0);
    // npm has exited: the service it ran must be gone too, its port closed.
    await expect(fetch(`${service.url}/health`)).rejects.toThrow();
    expect(logLines(service.output()).map((l) => l.msg)).toContain('stopped');
  });

  it('migrates exactly once when two instances start at once against one empty database', async () => {
    const url = await newDatabase();

    const [a, b] = await Promise.all([start({ DATABASE_URL: url }), start({ DATABASE_URL: url })]);
    await Promise.all([a.stop(), b.stop()]);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const rows = (await client.query('select migration_name from _prisma_migrations')).rows;
    await client.end();
    const migrations = await readMigrations();
    expect(rows).toHaveLength(migrations.length);
    const appliedBy = [a, b].map((s) => logLines(s.output()).filter((l) => l.msg === 'applied migration').length);
    expect(appliedBy.sort()).toEqual([0, migrations.length]);
  });

  it('keeps embedded PostgreSQL data across restarts and leaves no server behind', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lazarus-data-'));
    tempDirs.push(dir);
    await chmod(dir, 0o777);
    const env = { LAZARUS_DATA_DIR: join(dir, 'pgdata'), LAZARUS_EMBEDDED_PG_PORT: String(await freePort()) };

    const first = await start(env);
    const dbUrl = /"embedded":true/.test(first.output()) ? `postgresql://postgres:lazarus@127.0.0.1:${env.LAZARUS_EMBEDDED_PG_PORT}/lazarus` : '';
    const client = new pg.Client({ connectionString: dbUrl });
    await client.connect();
    await client.query(`INSERT INTO dead_letters (event_type, payload, error_message) VALUES ('order.placed', '{"orderId": 7}', 'HTTP 503 from inventory-service')`);
    await client.end();
    expect(await first.stop('SIGINT')).toBe(0);
    const portFree = await isPortFree(Number(env.LAZARUS_EMBEDDED_PG_PORT));

    const second = await start(env);
    const data = await graphql(second.url, '{ deadLetters { edges { node { eventType payload } } } }');
    expect(await second.stop()).toBe(0);

    expect(portFree).toBe(true);
    expect(data).toEqual({ data: { deadLetters: { edges: [{ node: { eventType: 'order.placed', payload: { orderId: 7 } } }] } } });
  });

  it('refuses a second start on a data folder a live Lazarus uses, naming the folder and the owner, and leaves the first serving', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lazarus-data-'));
    tempDirs.push(dir);
    await chmod(dir, 0o777);
    const dataDir = join(dir, 'pgdata');
    const env = { LAZARUS_DATA_DIR: dataDir, LAZARUS_EMBEDDED_PG_PORT: String(await freePort()) };
    const first = await start(env);
    try {
      const second = await runToExit({ ...env, PORT: '0' });

      const lines = (second.stdout + second.stderr).split('\n').filter((l) => l.includes('cannot start'));
      expect(second.code).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`data folder ${dataDir} is in use by the Lazarus process ${first.child.pid}`);
      expect((await fetch(`${first.url}/ready`)).status).toBe(200);
      expect(await graphql(first.url, '{ deadLetters { totalCount } }')).toEqual({ data: { deadLetters: { totalCount: 0 } } });
      // The first one printed where any language can INSERT.
      const running = logLines(first.output()).find((l) => String(l.msg).startsWith('embedded PostgreSQL is running'));
      expect(running?.msg).toBe(`embedded PostgreSQL is running: psql postgresql://postgres:lazarus@127.0.0.1:${env.LAZARUS_EMBEDDED_PG_PORT}/lazarus`);
    } finally {
      expect(await first.stop()).toBe(0);
    }
  });

  it('refuses a second start through a symlink to a data folder a live Lazarus uses, with the same one line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lazarus-data-'));
    tempDirs.push(dir);
    await chmod(dir, 0o777);
    const dataDir = join(dir, 'pgdata');
    const link = join(dir, 'link');
    const env = { LAZARUS_DATA_DIR: dataDir, LAZARUS_EMBEDDED_PG_PORT: String(await freePort()) };
    const first = await start(env);
    try {
      await symlink(dataDir, link);

      const second = await runToExit({ ...env, LAZARUS_DATA_DIR: link, PORT: '0' });

      const lines = (second.stdout + second.stderr).split('\n').filter((l) => l.includes('cannot start'));
      expect(second.code).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`data folder ${await realpath(dataDir)} is in use by the Lazarus process ${first.child.pid}`);
      expect((await fetch(`${first.url}/ready`)).status).toBe(200);
    } finally {
      expect(await first.stop()).toBe(0);
    }
  });

  it('recovers the data folder after the service was killed with SIGKILL, and leaves no PostgreSQL behind', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lazarus-data-'));
    tempDirs.push(dir);
    await chmod(dir, 0o777);
    const dataDir = join(dir, 'pgdata');
    const env = { LAZARUS_DATA_DIR: dataDir, LAZARUS_EMBEDDED_PG_PORT: String(await freePort()) };

    const killed = await start(env);
    expect(await killed.stop('SIGKILL')).toBeNull();
    expect(await postgresServing(dataDir)).toBe(true); // orphaned by the kill

    const restarted = await start(env);
    const data = await graphql(restarted.url, '{ deadLetters { totalCount } }');
    expect(await restarted.stop()).toBe(0);

    expect(data).toEqual({ data: { deadLetters: { totalCount: 0 } } });
    expect(logLines(restarted.output()).map((l) => l.msg)).toContain('stopping an embedded PostgreSQL left running by an earlier run');
    expect(await postgresServing(dataDir)).toBe(false);
  });
});

describe('refusing to start', () => {
  function expectOneClearLine(result: { code: number | null; stdout: string; stderr: string }, message: RegExp) {
    expect(result.code).not.toBe(0);
    const lines = (result.stdout + result.stderr).split('\n').filter(Boolean);
    const match = lines.filter((l) => message.test(l));
    expect(match).toHaveLength(1);
    expect(result.stdout + result.stderr).not.toMatch(/\n\s+at /); // no stack trace
  }

  it('on an unparseable DATABASE_URL', async () => {
    const result = await runToExit({ DATABASE_URL: 'postgres//nope' });
    expect(result.code).toBe(2);
    expectOneClearLine(result, /DATABASE_URL: must be a postgres/);
  });

  it('on an unreachable database', async () => {
    const port = await freePort();
    const result = await runToExit({ DATABASE_URL: `postgresql://postgres:secret-pw@127.0.0.1:${port}/lazarus` });
    expectOneClearLine(result, new RegExp(`cannot connect to PostgreSQL at 127.0.0.1:${port}/lazarus: connection refused`));
    expect(result.stdout + result.stderr).not.toContain('secret-pw');
  });

  it('on an occupied port', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const result = await runToExit({ DATABASE_URL: await newDatabase(), PORT: String(port) });
      expectOneClearLine(result, new RegExp(`port ${port} on 127.0.0.1 is already in use`));
    } finally {
      blocker.close();
    }
  });

  it('on an embedded PostgreSQL port in use, and leaves no PostgreSQL behind', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lazarus-data-'));
    tempDirs.push(dir);
    await chmod(dir, 0o777);
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const result = await runToExit({ LAZARUS_DATA_DIR: join(dir, 'pgdata'), LAZARUS_EMBEDDED_PG_PORT: String(port) });

      expect(result.code).toBe(1);
      expectOneClearLine(result, new RegExp(`could not start embedded PostgreSQL on port ${port}: the port is already in use`));
      expect(await postgresServing(join(dir, 'pgdata'))).toBe(false);
    } finally {
      blocker.close();
    }
  });

  it('on a data folder that cannot be created', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lazarus-blocked-'));
    tempDirs.push(dir);
    await writeFile(join(dir, 'file'), 'not a folder');
    const result = await runToExit({ LAZARUS_DATA_DIR: join(dir, 'file', 'pgdata') });
    expectOneClearLine(result, /data folder .* cannot be created/);
  });

  it('on a database whose applied migration was edited', async () => {
    const url = await newDatabase();
    const first = await start({ DATABASE_URL: url });
    await first.stop();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`update _prisma_migrations set checksum = repeat('0', 64)`);
    await client.end();

    const result = await runToExit({ DATABASE_URL: url });

    expectOneClearLine(result, /was edited after it was applied/);
  });
});

/** Whether any live PostgreSQL process serves this data folder. */
async function postgresServing(dataDir: string): Promise<boolean> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  for (const pid of pids) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('postgres') && cmdline.includes(dataDir)) return true;
  }
  return false;
}

async function isPortFree(port: number): Promise<boolean> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}
