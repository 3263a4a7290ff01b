// The structure rules of shared/STYLE.md, checked in CI (.ci/run): no import circles; arrows point
// down (service → api | workers | live → reads → domain → db: nothing imports a floor above it, and
// live/ and workers/ never import the GraphQL layer in api/); only the known floors under src/; SQL (`Prisma.sql`, `$queryRaw`, `$executeRaw`, pg `.query(`) only
// under src/db/. Prints each problem and exits 1 when there is one.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../src', import.meta.url));
const files = readdirSync(root, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts') && !f.startsWith('generated/'))
  .map((f) => join(root, f));

const top = (file: string) => relative(root, file).split('/')[0]!;
/** Folders each folder must not import from. */
const FORBIDDEN: Record<string, string[]> = {
  db: ['domain', 'reads', 'live', 'api', 'workers', 'cli', 'service.ts', 'main.ts'],
  domain: ['reads', 'live', 'api', 'workers', 'cli', 'service.ts', 'main.ts'],
  reads: ['live', 'api', 'workers', 'cli', 'service.ts', 'main.ts'],
  live: ['api', 'cli', 'service.ts', 'main.ts'],
  workers: ['api', 'cli', 'service.ts', 'main.ts'],
};
/** Only these folders (and files) may sit directly under src/: the floors of the layout. */
const FLOORS = ['api', 'cli', 'client', 'db', 'domain', 'generated', 'live', 'reads', 'types', 'workers', 'config.ts', 'logger.ts', 'main.ts', 'service.ts'];
const SQL = /Prisma\.sql`|\$queryRaw|\$executeRaw|\.query(?:<[^>]*>)?\(\s*['"`]/;

const problems: string[] = readdirSync(root).filter((f) => !FLOORS.includes(f)).map((f) => `not a floor of the layout: src/${f} (shared/STYLE.md)`);
const graph = new Map<string, string[]>();
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const imports = [...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/gm)].map((m) => resolve(dirname(file), m[1]!));
  graph.set(file, imports.filter((i) => files.includes(i)));
  for (const target of imports) {
    if (FORBIDDEN[top(file)]?.includes(top(target))) problems.push(`arrow up: ${relative(root, file)} imports ${relative(root, target)}`);
  }
  if (top(file) !== 'db') {
    text.split('\n').forEach((line, i) => {
      if (SQL.test(line) && !line.trim().startsWith('//') && !line.trim().startsWith('*')) problems.push(`SQL outside db/: ${relative(root, file)}:${i + 1}`);
    });
  }
}

// Circles: a depth-first walk that meets a file still on its own path.
const state = new Map<string, 'open' | 'done'>();
const walk = (file: string, path: string[]) => {
  state.set(file, 'open');
  for (const next of graph.get(file) ?? []) {
    if (state.get(next) === 'open') problems.push(`import circle: ${[...path.slice(path.indexOf(next)), next].map((f) => relative(root, f)).join(' -> ')}`);
    else if (!state.has(next)) walk(next, [...path, next]);
  }
  state.set(file, 'done');
};
for (const file of files) if (!state.has(file)) walk(file, [file]);

for (const p of problems) console.error(p);
console.log(`${files.length} files: ${problems.length} structure problem${problems.length === 1 ? '' : 's'}`);
process.exit(problems.length ? 1 : 0);
