// The service's own small statements: readiness and the listener's probe NOTIFY.
import type pg from 'pg';

/** How many of `names` are applied migrations (finished, not rolled back). */
export async function countAppliedMigrations(pool: pg.Pool, names: readonly string[]): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `select count(*)::int as n from _prisma_migrations
      where finished_at is not null and rolled_back_at is null and migration_name = any($1)`,
    [names],
  );
  return rows[0]?.n ?? 0;
}

/** NOTIFY from this pool's session (the path every writer's NOTIFY takes). */
export async function notify(pool: pg.Pool, channel: string, payload: string): Promise<void> {
  await pool.query('select pg_notify($1, $2)', [channel, payload]);
}
