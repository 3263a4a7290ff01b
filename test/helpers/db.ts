// Each test file gets its own database cloned from the migrated template (fast: a file copy);
// each test starts from empty tables. Tests commit for real, because NOTIFY fires only on commit.
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, inject } from 'vitest';
import { createDb, type Db, type DbHandle } from '../../src/db/createDb.ts';
import { ERROR_GROUP_FOLD_LOCK } from '../../src/db/sql/foldErrorGroups.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from './databases.ts';

export interface TestDatabase {
  readonly url: string;
  readonly db: Db;
  readonly handle: DbHandle;
}

export function useTestDatabase(): TestDatabase {
  const adminUrl = inject('adminUrl');
  const name = randomDatabaseName('lazarus_t');
  let url = '';
  let handle: DbHandle | undefined;

  beforeAll(async () => {
    url = await createDatabase(adminUrl, name, inject('templateDatabase'));
    handle = createDb(url, { poolMax: 5, acquireTimeoutMs: 5_000, statementTimeoutMs: 15_000, applicationName: 'lazarus-test' });
  });
  beforeEach(async () => {
    await truncateAll(handle!);
  });
  afterAll(async () => {
    await handle?.close();
    await dropDatabase(adminUrl, name);
  });

  return {
    get url() {
      return url;
    },
    get db() {
      return handle!.db;
    },
    get handle() {
      return handle!;
    },
  };
}

export async function truncateAll(handle: DbHandle): Promise<void> {
  // A service running in the test (its retry loop, redrive runner, deliverer) locks rows of these
  // tables in its own order; PostgreSQL may pick this statement as a deadlock's victim (40P01).
  // It then rolled back whole, so it is simply run again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await truncateOnce(handle);
    } catch (error) {
      if ((error as { code?: string }).code !== '40P01' || attempt === 5) throw error;
    }
  }
}

async function truncateOnce(handle: DbHandle): Promise<void> {
  await handle.pool.query(
    // One implicit transaction. It first takes the error-group folder's lock (the folder only
    // tries it, and skips), so a service running in the test cannot fold while the tables go: its
    // fold and these TRUNCATEs took their locks in different orders and deadlocked.
    // Error groups next, on their own: truncating dead_letters also truncates them (a trigger),
    // which fails for tables the same TRUNCATE names.
    `select pg_advisory_xact_lock(${ERROR_GROUP_FOLD_LOCK});
     truncate error_group_deltas, error_groups, error_group_actions, error_group_hours restart identity;
     truncate dead_letter_states, dead_letters, delivery_attempts, dead_letter_actions, dead_letter_tombstones, redrives, redrive_items, redrive_actions, transforms, transform_items restart identity;
     truncate rate_limit_windows;
     truncate alerts, alert_throttles, alert_rule_windows, alert_rules restart identity;
     truncate bridge_states, source_redirects;
     delete from retry_policies where event_type <> '*'`,
  );
}

/**
 * A plain pg pool for a test's own SQL. `pool.end()` resolves before its connections have closed,
 * so the DROP DATABASE … WITH (FORCE) that follows can terminate them (57P01); without a listener
 * that error would surface as an uncaught exception. Any other idle-connection error still throws.
 */
export function testPool(url: string, options: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, ...options });
  pool.on('error', (error: Error & { code?: string }) => {
    if (error.code !== '57P01') throw error;
  });
  return pool;
}
