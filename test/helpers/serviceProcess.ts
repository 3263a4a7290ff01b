// The service as a real child process (`node src/main.ts`), for start-up and fault tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** `npm start`, as a user or a supervisor runs it. */
export const NPM_START = ['npm', 'start', '--silent'] as const;

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process printed so far (JSON log lines). */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function serviceEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const { DATABASE_URL: _ignored, ...rest } = process.env;
  return { ...rest, NODE_ENV: 'test', LOG_FORMAT: 'json', LOG_LEVEL: 'info', PORT: '0', ...extra };
}

/** Starts the service (by default `node src/main.ts`) and resolves once it logs its URL; rejects if it exits first. */
export function startService(env: Record<string, string>, command: readonly string[] = [process.execPath, MAIN]): Promise<ServiceProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), { env: serviceEnv(env), cwd: ROOT });
    let out = '';
    let started = false;
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    child.stderr.on('data', (d) => (out += d));
    child.stdout.on('data', (d) => {
      out += d;
      const match = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (match && !started) {
        started = true;
        resolve({ url: match[1]!, child, output: () => out, exited, stop: (signal = 'SIGTERM') => (child.kill(signal), exited) });
      }
    });
    void exited.then((code) => {
      if (!started) reject(new Error(`service exited with ${code} before starting:\n${out}`));
    });
  });
}

/** Runs the service until it exits; for start-up failures. */
export function runServiceToExit(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN], { env: serviceEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    // 'close', not 'exit': 'exit' can come before the last of the child's output has been read.
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export function logLines(output: string): Record<string, unknown>[] {
  return output.split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

export async function postGraphQL(url: string, query: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query }),
  });
  return { status: response.status, body: await response.json() };
}
