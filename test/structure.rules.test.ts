import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkTree, importProblem, modelDelegates, PRISMA_FREE, prismaCallLines, SQL_RUNNERS, sqlRunnerLines, TRANSACTION_FREE } from '../scripts/checkStructure.ts';

const delegates = modelDelegates(readFileSync(new URL('../prisma/schema.prisma', import.meta.url), 'utf8'));

describe('the structure rules', () => {
  it('refuses an import from api/ of db/, and lets api/ go through reads/ or domain/', () => {
    expect(importProblem('api', 'db')).toBe('skips a floor');
    expect(importProblem('api', 'reads')).toBeNull();
    expect(importProblem('api', 'domain')).toBeNull();
    expect(importProblem('reads', 'db')).toBeNull();
    expect(importProblem('db', 'api')).toBe('arrow up');
  });

  it('names every model of the Prisma schema as its client delegate', () => {
    expect(delegates).toEqual(expect.arrayContaining(['deadLetter', 'errorGroupAction', 'alertRule', 'retryPolicy', 'transform']));
  });

  it('finds Prisma model calls and transactions, on the line where each starts', () => {
    const text = [
      "return ctx.db.transform.findUnique({ ...query, where: { id } });",
      'const rows = await db.deadLetterAction.findMany({ where });',
      'await tx.alertRule',
      '  .updateMany({ where: { id }, data });',
      'return db.$transaction(async (tx) => work(tx));',
      'const n = await deps.db.errorGroup.count();',
    ].join('\n');
    expect(prismaCallLines(text, delegates)).toEqual([1, 2, 3, 5, 6]);
  });

  it('keeps model calls out of api/, reads/ and domain/, and lets only domain/ start a transaction', () => {
    expect(PRISMA_FREE).toEqual(expect.arrayContaining(['api', 'reads', 'domain']));
    expect(TRANSACTION_FREE).toEqual(expect.arrayContaining(['api', 'reads']));
    expect(TRANSACTION_FREE).not.toContain('domain');
  });

  it('finds model calls but not transactions when transactions are allowed', () => {
    const text = [
      'return db.$transaction(async (tx) => {',
      '  await lockHeldTransform(tx, p);',
      '  await tx.transform.updateMany({ where: { id }, data });',
      '});',
    ].join('\n');
    expect(prismaCallLines(text, delegates, false)).toEqual([3]);
    expect(prismaCallLines(text, delegates)).toEqual([1, 3]);
  });

  it('does not take a Map, a hash, a comment or a db/ function for a Prisma call', () => {
    const text = [
      'groups.delete(key);',
      'group.sinks.delete(sink);',
      "createHash('sha256').update(token).digest();",
      'counts.total.count();',
      '// ctx.db.deadLetter.findMany({ where }) is what this replaced',
      ' * db.$transaction( in a doc comment',
      'return readTransform(ctx.db, id, query);',
      'const deadLetter = await findDeadLetter(db, id);',
    ].join('\n');
    expect(prismaCallLines(text, delegates)).toEqual([]);
  });

  it('finds every way to run SQL but runSql: raw Prisma queries and pg query calls', () => {
    const text = [
      'const rows = await db.$queryRaw<Row[]>`select 1`;',
      'await tx.$executeRaw`set local synchronous_commit = off`;',
      'await db.$queryRawUnsafe(sql.text, ...sql.values);',
      "const { rows } = await pool.query<{ n: number }>('select 1');",
      'await client.query(statement);',
      'const result = await entry.pool',
      '  .query({ name, text, values });',
    ].join('\n');
    expect(sqlRunnerLines(text)).toEqual([1, 2, 3, 4, 5, 7]);
  });

  it('does not take a GraphQL query, a comment or a runSql call for a second way to run SQL', () => {
    const text = [
      'if (isBatchOnly(params.query, options.batchOperations)) return;',
      'document = enveloped.parse(payload.query);',
      '// pool.query(text) is what runSql does',
      ' * db.$queryRaw in a doc comment',
      "return runSql<Row>(db, Prisma.sql`select 1`, { name: 'one' });",
    ].join('\n');
    expect(sqlRunnerLines(text)).toEqual([]);
  });

  it('lets only runSql and the migrator run SQL by hand', () => {
    expect(SQL_RUNNERS).toEqual(['db/runSql.ts', 'db/migrate.ts', 'db/embedded.ts']);
  });

  it('finds no structure problem in src/', () => {
    expect(checkTree().problems).toEqual([]);
  });
});
