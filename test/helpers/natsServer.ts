// A JetStream-enabled nats-server of the test file's own, on a free port with a storage directory of
// its own: `nats-server -js -a 127.0.0.1 -p PORT -sd DIR`. Ready when it logs so and a client connects;
// kill() and start() again keep the port and the directory (a broker restart), stop() removes both.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { connect } from '@nats-io/transport-node';

export interface NatsServer {
  readonly port: number;
  readonly url: string;
  /** The running server's process id, or null while it is down. */
  readonly pid: number | null;
  /** Starts the server (again), resolving once a client has connected to it. */
  start(): Promise<void>;
  /** kill -9, resolving once the process has exited. */
  kill(): Promise<void>;
  /** Kills the server and removes its storage directory. */
  stop(): Promise<void>;
}

export async function startNatsServer(): Promise<NatsServer> {
  const dir = await mkdtemp(join(tmpdir(), 'lazarus-nats-'));
  const port = await freePort();
  let child: ChildProcess | null = null;

  const start = async () => {
    const started = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    child = started;
    const log: string[] = [];
    const ready = new Promise<void>((resolve, reject) => {
      createInterface({ input: started.stderr! }).on('line', (line) => {
        log.push(line);
        if (line.includes('Server is ready')) resolve();
      });
      started.once('exit', (code) => reject(new Error(`nats-server exited with ${code} before it was ready:\n${log.join('\n')}`)));
      started.once('error', reject);
    });
    await ready;
    const nc = await connect({ servers: [`nats://127.0.0.1:${port}`] });
    await nc.close();
  };
  const kill = async () => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = once(running, 'exit');
    running.kill('SIGKILL');
    await exited;
  };

  await start();
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    get pid() {
      return child?.pid ?? null;
    },
    start,
    kill,
    stop: async () => {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A port nothing listens on right now (the OS's pick for port 0). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}
