// The structure rules of shared/STYLE.md, checked in CI (.ci/run): no import circles; arrows point
// down (service → api | workers | live → reads → domain → db, with runtime/ under live/ and workers/:
// nothing imports a floor above it, and
// live/ and workers/ never import the GraphQL layer in api/); api/ never imports db/ (every read goes
// api → reads → db, types included: reads/ re-exports what api/ names); only the known floors under
// src/; SQL (`Prisma.sql`, `$queryRaw`, `$executeRaw`, pg `.query(`) only under src/db/; hand-written SQL
// runs only through src/db/runSql.ts (no `$queryRaw`/`$executeRaw`/pg `.query(` in any other file but
// the migrator's, see SQL_RUNNERS); no Prisma
// model call (`x.deadLetter.findMany(`) in the floors of PRISMA_FREE, and no transaction
// (`db.$transaction(`) in those of TRANSACTION_FREE. Prints each problem and exits 1 when there is
// one. The rules are exported for test/structure.rules.test.ts.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../src', import.meta.url));
/** Folders each folder must not import from. */
const FORBIDDEN: Record<string, string[]> = {
  db: ['domain', 'reads', 'live', 'api', 'workers', 'cli', 'service.ts', 'main.ts'],
  domain: ['reads', 'live', 'api', 'workers', 'cli', 'service.ts', 'main.ts'],
  reads: ['live', 'api', 'workers', 'cli', 'service.ts', 'main.ts'],
  live: ['api', 'cli', 'service.ts', 'main.ts'],
  workers: ['api', 'cli', 'service.ts', 'main.ts'],
  // Process plumbing (the periodic runner, the work loop) under both live/ and workers/.
  runtime: ['db', 'domain', 'reads', 'live', 'api', 'workers', 'cli', 'service.ts', 'main.ts'],
};
/** Floors a folder must not import from although they are below it: it goes through the floor between. */
const SKIPPED: Record<string, string[]> = {
  api: ['db'],
};
/** Folders where no Prisma model call may be written: their reads and writes are functions in db/. */
export const PRISMA_FREE = ['api', 'reads', 'domain'];
/**
 * Folders of PRISMA_FREE that may not start a transaction either. domain/ may: where a transaction
 * starts and ends is its decision, and the db/ functions inside take the transaction's client.
 */
export const TRANSACTION_FREE = ['api', 'reads'];
/** Only these folders (and files) may sit directly under src/: the floors of the layout. */
const FLOORS = ['api', 'cli', 'client', 'db', 'domain', 'generated', 'live', 'reads', 'runtime', 'types', 'workers', 'config.ts', 'logger.ts', 'main.ts', 'service.ts'];
const SQL = /Prisma\.sql`|\$queryRaw|\$executeRaw|\.query(?:<[^>]*>)?\(\s*['"`]/;
/** A way to run SQL besides Prisma's model API: Prisma's raw queries, or pg's `.query(` on a pool or client. */
const RUNS_SQL = /\$(?:queryRaw|executeRaw)(?:Unsafe)?\b|\.query\s*(?:<[^>]*>)?\s*\(/;
/**
 * The files that may run SQL by hand: runSql, the one helper every db/sql statement goes through,
 * and the migrator's own session (DDL files and advisory locks on one connection, before any Db
 * exists; the embedded server's `create database`).
 */
export const SQL_RUNNERS = ['db/runSql.ts', 'db/migrate.ts', 'db/embedded.ts'];
// Prisma Client's model API: the methods of a model's delegate (`db.deadLetter`).
const MODEL_METHODS = [
  'findMany', 'findUnique', 'findUniqueOrThrow', 'findFirst', 'findFirstOrThrow', 'count', 'aggregate', 'groupBy',
  'create', 'createMany', 'createManyAndReturn', 'update', 'updateMany', 'updateManyAndReturn', 'delete', 'deleteMany', 'upsert',
];

/** The problem with an import from floor `from` of floor `to`, if any. */
export function importProblem(from: string, to: string): 'arrow up' | 'skips a floor' | null {
  if (FORBIDDEN[from]?.includes(to)) return 'arrow up';
  if (SKIPPED[from]?.includes(to)) return 'skips a floor';
  return null;
}

/** The delegate names of the models in a Prisma schema (`model DeadLetter` → `deadLetter`). */
export function modelDelegates(schema: string): string[] {
  return [...schema.matchAll(/^model\s+(\w+)/gm)].map((m) => m[1]![0]!.toLowerCase() + m[1]!.slice(1));
}

/**
 * The 1-based lines of `text` where a Prisma model call starts: a model's delegate reached through a
 * dot, then a model-API method (`ctx.db.transform.findUnique(`, `tx.alertRule\n  .update(`), or an
 * interactive or batch transaction (`db.$transaction(`) unless `transactions` is false. Only delegate
 * names count, so a Map's `.delete(` or a hash's `.update(` is not one; lines that are comments are skipped.
 */
export function prismaCallLines(text: string, delegates: readonly string[], transactions = true): number[] {
  const model = `(?:${delegates.join('|')})\\s*\\.\\s*(?:${MODEL_METHODS.join('|')})`;
  const call = new RegExp(`\\.(?:${transactions ? `${model}|\\$transaction` : model})\\s*[(<]`, 'g');
  const lines = text.split('\n');
  const found = new Set<number>();
  for (const m of text.matchAll(call)) {
    const line = text.slice(0, m.index).split('\n').length;
    const trimmed = lines[line - 1]!.trim();
    if (!trimmed.startsWith('//') && !trimmed.startsWith('*')) found.add(line);
  }
  return [...found];
}

/** The 1-based lines of `text` that run SQL other than through runSql (RUNS_SQL); comment lines are skipped. */
export function sqlRunnerLines(text: string): number[] {
  return text.split('\n').flatMap((line, i) => {
    const trimmed = line.trim();
    return RUNS_SQL.test(line) && !trimmed.startsWith('//') && !trimmed.startsWith('*') ? [i + 1] : [];
  });
}

/** Every structure problem of src/, and how many files were read. */
export function checkTree(): { fileCount: number; problems: string[] } {
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.startsWith('generated/'))
    .map((f) => join(root, f));
  const top = (file: string) => relative(root, file).split('/')[0]!;
  const delegates = modelDelegates(readFileSync(fileURLToPath(new URL('../prisma/schema.prisma', import.meta.url)), 'utf8'));
  const problems: string[] = readdirSync(root).filter((f) => !FLOORS.includes(f)).map((f) => `not a floor of the layout: src/${f} (shared/STYLE.md)`);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const imports = [...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/gm)].map((m) => resolve(dirname(file), m[1]!));
    graph.set(file, imports.filter((i) => files.includes(i)));
    for (const target of imports) {
      const problem = importProblem(top(file), top(target));
      if (problem) problems.push(`${problem}: ${relative(root, file)} imports ${relative(root, target)}`);
    }
    if (top(file) !== 'db') {
      text.split('\n').forEach((line, i) => {
        if (SQL.test(line) && !line.trim().startsWith('//') && !line.trim().startsWith('*')) problems.push(`SQL outside db/: ${relative(root, file)}:${i + 1}`);
      });
    }
    if (!SQL_RUNNERS.includes(relative(root, file))) {
      for (const line of sqlRunnerLines(text)) problems.push(`SQL run outside runSql: ${relative(root, file)}:${line} (src/db/runSql.ts)`);
    }
    if (PRISMA_FREE.includes(top(file))) {
      for (const line of prismaCallLines(text, delegates, TRANSACTION_FREE.includes(top(file)))) problems.push(`Prisma call outside db/: ${relative(root, file)}:${line} (a function in db/models or db/sql)`);
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

  return { fileCount: files.length, problems };
}

if (import.meta.main) {
  const { fileCount, problems } = checkTree();
  for (const p of problems) console.error(p);
  console.log(`${fileCount} files: ${problems.length} structure problem${problems.length === 1 ? '' : 's'}`);
  process.exit(problems.length ? 1 : 0);
}
