// Where the test PostgreSQL comes from: TEST_DATABASE_URL if set; otherwise a testcontainers
// container when a Docker engine answers; otherwise an embedded PostgreSQL in a temp folder.
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from '../../src/db/embeddedPostgres.ts';

export interface TestServer {
  /** A URL to a database on the server we may create and drop databases from. */
  adminUrl: string;
  kind: 'external' | 'testcontainers' | 'embedded';
  stop(): Promise<void>;
}

export async function startTestServer(): Promise<TestServer> {
  const external = process.env.TEST_DATABASE_URL;
  if (external) return { adminUrl: external, kind: 'external', stop: async () => {} };
  if (hasDockerEngine()) {
    const container = await tryTestcontainers();
    if (container) return container;
  }
  return startEmbedded();
}

function hasDockerEngine(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

async function tryTestcontainers(): Promise<TestServer | undefined> {
  try {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer('postgres:17-alpine').start();
    return { adminUrl: container.getConnectionUri(), kind: 'testcontainers', stop: async () => void (await container.stop()) };
  } catch {
    return undefined; // a socket without a working engine: fall back to embedded
  }
}

/** A throwaway embedded PostgreSQL 18 server; `flags` are extra `-c name=value` settings. */
export async function startEmbedded(flags: string[] = []): Promise<TestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'lazarus-test-pg-'));
  await chmod(dir, 0o777); // as root, PostgreSQL runs as the postgres user and must reach its data folder
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off', '-c', 'max_connections=300', ...flags],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  return {
    adminUrl: `postgresql://postgres:postgres@127.0.0.1:${port}/postgres`,
    kind: 'embedded',
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}
