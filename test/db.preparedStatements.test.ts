// Named prepared statements are for fixed statement texts only, under one switch (DbOptions
// preparedStatements, DATABASE_PREPARED_STATEMENTS); pages are planned for their values each time.
import { afterEach, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../src/db/createDb.ts';
import { readChangeHorizon } from '../src/db/sql/readChangeHorizon.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { seedReadRows } from './helpers/readSeed.ts';

const t = useTestDatabase();
let handle: DbHandle | undefined;
afterEach(async () => {
  await handle?.close();
  handle = undefined;
});

// One connection, so pg_prepared_statements shows everything this pool prepared.
async function preparedAfterReads(preparedStatements: boolean | undefined): Promise<string[]> {
  handle = createDb(t.url, { poolMax: 1, acquireTimeoutMs: 5_000, statementTimeoutMs: 15_000, applicationName: 'lazarus-test-prepared', preparedStatements });
  await seedReadRows(t.db);
  const server = testServer(handle.db);
  for (const filter of [null, { eventTypes: ['order.placed'] }, { errorText: 'inventory' }]) {
    const { body } = await execute(server, 'query ($f: DeadLetterFilter) { deadLetters(filter: $f, first: 5) { totalCount edges { cursor node { id createdAt } } } }', { f: filter });
    expect(body.errors).toBeUndefined();
  }
  await readChangeHorizon(handle.db);
  return (await handle.pool.query<{ name: string }>('select name from pg_prepared_statements order by name')).rows.map((r) => r.name);
}

describe('prepared statements', () => {
  it('prepares the fixed-text horizon read and never a page or count', async () => {
    expect(await preparedAfterReads(undefined)).toEqual(['lazarus_change_horizon']);
  });

  it('prepares nothing when the switch is off', async () => {
    expect(await preparedAfterReads(false)).toEqual([]);
  });
});
