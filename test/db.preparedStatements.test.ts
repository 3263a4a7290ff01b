// Named prepared statements are for fixed statement texts only, under one switch (DbOptions
// preparedStatements, DATABASE_PREPARED_STATEMENTS); pages are planned for their values each time.
import { afterEach, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../src/db/createDb.ts';
import { claimDueDeadLetters } from '../src/db/sql/claimDueDeadLetters.ts';
import { readChangeHorizon } from '../src/db/sql/readChangeHorizon.ts';
import { releaseLeases } from '../src/db/sql/releaseLeases.ts';
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

  it('plans the claim once, not on every run: its generic plan is kept', async () => {
    handle = createDb(t.url, { poolMax: 1, acquireTimeoutMs: 5_000, statementTimeoutMs: 15_000, applicationName: 'lazarus-test-prepared' });
    // Enough due rows that a generic plan guessing at a LIMIT or at a type being ordered would
    // cost more than the plans for the values (a tenth of 5,000 rows, not 10).
    await t.db.$executeRaw`insert into dead_letters (event_type, payload) select 'order.placed', '{}' from generate_series(1, 5000)`;
    await t.db.$executeRaw`analyze dead_letter_states`;
    // PostgreSQL plans a prepared statement for its values 5 times, then keeps the generic plan
    // only if it does not cost more than those: 12 claims show which way it went.
    for (let i = 0; i < 12; i++) {
      const claimed = await claimDueDeadLetters(handle.db, { limit: 10, workerId: 'w', leaseSeconds: 30, inProcessEventTypes: ['order.placed'] });
      expect(claimed.length).toBe(10);
      await releaseLeases(handle.db, claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken })));
    }
    const { rows } = await handle.pool.query<{ generic_plans: string; custom_plans: string }>(
      `select generic_plans, custom_plans from pg_prepared_statements where name like 'lazarus_claim%'`);
    expect(rows.map((r) => [Number(r.generic_plans), Number(r.custom_plans)])).toEqual([[7, 5]]);
  });
});

