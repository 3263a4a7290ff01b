// Writes schema.graphql from the Pothos schema; with --check, fails when the committed file is stale.
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { printSchemaSdl } from '../src/graphql/schema.ts';

const target = fileURLToPath(new URL('../schema.graphql', import.meta.url));
const sdl = printSchemaSdl();

if (process.argv.includes('--check')) {
  const committed = await readFile(target, 'utf8').catch(() => '');
  if (committed !== sdl) {
    process.stderr.write('schema.graphql is stale: run `npm run schema` and commit the result\n');
    process.exit(1);
  }
  process.stdout.write('schema.graphql is up to date\n');
} else {
  await writeFile(target, sdl);
  process.stdout.write(`wrote ${target}\n`);
}
