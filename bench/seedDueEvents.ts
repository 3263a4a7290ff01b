// The backlog the drain benches seed: `count` due 'order.placed' events with a ~1 KB payload and a
// ~2 KB stack, in one set-based INSERT, after emptying dead_letters and delivery_attempts. With
// `keepIdsUpTo`, the rows with ids up to it (a finished history, bench/bulkLoadDeadLetters.ts) stay:
// only the rows above it are deleted, through the triggers as a retention purge would.
import type pg from 'pg';

export async function seedDueEvents(pool: pg.Pool, count: number, keepIdsUpTo = 0): Promise<void> {
  if (keepIdsUpTo > 0) {
    await pool.query('delete from dead_letters where id > $1', [keepIdsUpTo]);
    await pool.query('truncate delivery_attempts');
  } else {
    await pool.query('truncate dead_letters, delivery_attempts restart identity');
  }
  await pool.query(`
    insert into dead_letters (event_type, payload, error_message, error_stack)
    select 'order.placed',
           jsonb_build_object('orderId', g, 'customer', 'c-' || g, 'lines', (select jsonb_agg(jsonb_build_object('sku', 'SKU-' || i, 'qty', i, 'note', repeat('x', 40))) from generate_series(1, 12) i)),
           'HTTP 503 from inventory-service',
           repeat('    at processOrder (/app/src/consumers/orders.ts:123:45)' || chr(10), 36)
      from generate_series(1, $1::int) g`, [count]);
  await pool.query('vacuum analyze dead_letters');
  await pool.query('vacuum analyze dead_letter_states');
}
