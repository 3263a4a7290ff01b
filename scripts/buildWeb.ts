// Builds what the service serves at / and /graphql into web/dist: the console (Vite), GraphiQL's
// assets as hashed files instead of one 9 MB inline page, and .br/.gz copies of every text asset.
import { createHash } from 'node:crypto';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { css, editorWorkerService, graphqlWorker, js, jsonWorker } from '@graphql-yoga/render-graphiql/graphiql';
import { build } from 'vite';

const webDir = fileURLToPath(new URL('../web', import.meta.url));
const dist = join(webDir, 'dist');

await build({ configFile: join(webDir, 'vite.config.ts'), logLevel: 'warn' });

async function hashed(name: string, ext: string, text: string): Promise<string> {
  const file = `${name}-${createHash('sha256').update(text).digest('base64url').slice(0, 10)}.${ext}`;
  await writeFile(join(dist, 'assets', file), text);
  return `/assets/${file}`;
}
const manifest = {
  js: await hashed('graphiql', 'js', js),
  css: await hashed('graphiql', 'css', css),
  workers: {
    editorWorkerService: await hashed('graphiql-editor.worker', 'js', editorWorkerService),
    json: await hashed('graphiql-json.worker', 'js', jsonWorker),
    graphql: await hashed('graphiql-graphql.worker', 'js', graphqlWorker),
  },
};
await writeFile(join(dist, 'graphiql.json'), JSON.stringify(manifest));

const COMPRESSIBLE = /\.(js|css|html|svg|json|txt|map)$/;
const brotli = promisify(brotliCompress);
const gz = promisify(gzip);
let written = 0;
for (const entry of await readdir(dist, { recursive: true })) {
  const path = join(dist, entry);
  if (!COMPRESSIBLE.test(path) || !(await stat(path)).isFile()) continue;
  const body = await readFile(path);
  if (body.length < 512) continue;
  await writeFile(`${path}.br`, await brotli(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }));
  await writeFile(`${path}.gz`, await gz(body, { level: 9 }));
  written += 1;
}
console.log(`web/dist: console, GraphiQL assets, ${written} files precompressed (br, gz)`);
