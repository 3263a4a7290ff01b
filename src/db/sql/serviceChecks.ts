// The service's own small statements: readiness and the listener's probe NOTIFY.
import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';

/** How many of `names` are applied migrations (finished, not rolled back). */
export async function countAppliedMigrations(db: Db, names: readonly string[]): Promise<number> {
  const rows = await runSql<{ n: number }>(db, Prisma.sql`select count(*)::int as n from _prisma_migrations
      where finished_at is not null and rolled_back_at is null and migration_name = any(${names})`);
  return rows[0]?.n ?? 0;
}

/** NOTIFY from this Db's pool (the path every writer's NOTIFY takes). */
export async function notify(db: Db, channel: string, payload: string): Promise<void> {
  await runSql(db, Prisma.sql`select pg_notify(${channel}, ${payload})`);
}
