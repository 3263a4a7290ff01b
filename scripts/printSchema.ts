// Writes schema.graphql from the Pothos schema, and the console's typed copy of it
// (web/src/graphql-env.d.ts, read by gql.tada); with --check, fails when either committed file is stale.
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { introspectionFromSchema } from 'graphql';
import { outputIntrospectionFile } from '@gql.tada/internal';
import { printSchemaSdl, schema } from '../src/api/schema/schema.ts';

const files = [
  { path: fileURLToPath(new URL('../schema.graphql', import.meta.url)), text: printSchemaSdl() },
  {
    path: fileURLToPath(new URL('../web/src/graphql-env.d.ts', import.meta.url)),
    text: outputIntrospectionFile(introspectionFromSchema(schema, { descriptions: false }), { fileType: '.d.ts', shouldPreprocess: true }),
  },
];

if (process.argv.includes('--check')) {
  for (const { path, text } of files) {
    if ((await readFile(path, 'utf8').catch(() => '')) !== text) {
      process.stderr.write(`${path} is stale: run \`npm run schema\` and commit the result\n`);
      process.exit(1);
    }
  }
  process.stdout.write('schema.graphql and web/src/graphql-env.d.ts are up to date\n');
} else {
  for (const { path, text } of files) await writeFile(path, text);
  process.stdout.write(`wrote ${files.map((f) => f.path).join(', ')}\n`);
}
