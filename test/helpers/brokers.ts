// The brokers the tests use (RabbitMQ 5672, Redis 6379, NATS 4222 on 127.0.0.1): when a port is
// closed, scripts/startBrokers.sh starts what is missing, as .ci/run does before the suite. With all
// three up (the usual case) nothing runs.
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const BROKER_PORTS = { rabbitmq: 5672, redis: 6379, nats: 4222 } as const;

const SCRIPT = fileURLToPath(new URL('../../scripts/startBrokers.sh', import.meta.url));

export function isPortOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    socket.setTimeout(2_000);
    const done = (isOpen: boolean) => {
      socket.destroy();
      resolve(isOpen);
    };
    socket.once('connect', () => done(true)).once('error', () => done(false)).once('timeout', () => done(false));
  });
}

/** Starts the brokers whose port is closed; returns the names of those that were. */
export async function ensureBrokers(): Promise<string[]> {
  const closed: string[] = [];
  for (const [name, port] of Object.entries(BROKER_PORTS)) if (!(await isPortOpen(port))) closed.push(name);
  if (closed.length > 0) await promisify(execFile)('bash', [SCRIPT], { timeout: 180_000 });
  return closed;
}
