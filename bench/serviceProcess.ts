// The service as its own process for benchmarks (production settings, JSON logs): resolves once it
// logs its URL. Its warnings and errors are echoed to stderr. BENCH_SERVICE_NODE_ARGS (e.g.
// "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles it.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export function startServiceProcess(databaseUrl: string, extraEnv: Record<string, string> = {}): Promise<{ url: string; stop: () => Promise<void> }> {
  const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  const env = { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', NODE_ENV: 'production', LOG_FORMAT: 'json', LOG_LEVEL: 'info', ...extraEnv };
  return new Promise((resolve, reject) => {
    const nodeArgs = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const child = spawn(process.execPath, [...nodeArgs, main], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    child.stdout.on('data', (d) => {
      out += d;
      for (const line of String(d).split('\n')) if (/"level":(40|50|60)/.test(line)) process.stderr.write(`service: ${line.slice(0, 300)}\n`);
      const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (m) resolve({ url: m[1]!, stop: () => (child.kill('SIGTERM'), exited) });
    });
    void exited.then(() => reject(new Error(`service exited:\n${out}`)));
  });
}
