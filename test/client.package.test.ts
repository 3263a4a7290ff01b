// The typed client as another project gets it: `npm pack` of client/, installed from the tarball
// into a scratch project with no network, imported by plain Node, used against a real server, and
// type-checked against its .d.ts.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from './helpers/db.ts';
import { testServer } from './helpers/graphql.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(ROOT, 'node_modules/.bin/tsc');
const t = useTestDatabase();
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'lazarus-client-'));
  await run('npm', ['pack', './client', '--pack-destination', scratch, '--silent'], { cwd: ROOT });
  const tarball = (await readdir(scratch)).find((f) => f.endsWith('.tgz'))!;
  await writeFile(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', `./${tarball}`], { cwd: scratch });
}, 180_000);
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('the packed client', () => {
  it('installs without the service or any dependency, and dead-letters an event from plain Node', async () => {
    const http = createServer(testServer(t.db)).listen(0, '127.0.0.1');
    await once(http, 'listening');
    try {
      const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/graphql`;
      await writeFile(join(scratch, 'produce.mjs'), `
        import { LazarusClient, LazarusError } from 'lazarus-client';
        const lazarus = new LazarusClient({ url: ${JSON.stringify(url)} });
        const stored = await lazarus.deadLetter({ eventType: 'order.placed', payload: { orderId: 7 }, error: new Error('HTTP 503') });
        const refused = await lazarus.deadLetter({ eventType: '', payload: {} }).catch((e) => e instanceof LazarusError && e.code);
        console.log(JSON.stringify({ created: stored.created, refused }));
      `);

      const { stdout } = await run(process.execPath, ['produce.mjs'], { cwd: scratch });

      expect(JSON.parse(stdout)).toEqual({ created: true, refused: 'VALIDATION' });
      expect(await t.db.deadLetter.findMany({ select: { eventType: true, payload: true, errorMessage: true } }))
        .toEqual([{ eventType: 'order.placed', payload: { orderId: 7 }, errorMessage: 'HTTP 503' }]);
      expect((await readdir(join(scratch, 'node_modules'))).filter((f) => !f.startsWith('.'))).toEqual(['lazarus-client']);
    } finally {
      http.close();
    }
  });

  it('type-checks a TypeScript consumer against its declarations', async () => {
    await writeFile(join(scratch, 'consumer.ts'), `
      import { LazarusClient, type DeadLetterInput } from 'lazarus-client';
      const input: DeadLetterInput = { eventType: 'order.placed', payload: { orderId: 7 }, errorKind: 'DOWNSTREAM_API' };
      export const pending: Promise<{ id: string; created: boolean }> = new LazarusClient({ url: 'http://x/graphql' }).deadLetter(input);
      // @ts-expect-error: not an error kind
      export const wrong: DeadLetterInput = { eventType: 'x', payload: 1, errorKind: 'NOPE' };
    `);
    await writeFile(join(scratch, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, skipLibCheck: false, types: [] },
      files: ['consumer.ts'],
    }));

    const result = await run(TSC, ['-p', scratch]).then(() => 'ok', (e: { stdout: string }) => e.stdout);

    expect(result).toBe('ok');
  });
});
