// npm run bench:retry — drain rate of the retry engine vs a raw-SQL claim/complete loop, same
// database, same run. 50,000 due events (~1 KB payload, ~2 KB stack), no-op in-process handler,
// concurrency 10, batch 100. BENCH_DATABASE_URL (an admin URL; a scratch database is created and
// dropped) defaults to postgresql://postgres@127.0.0.1:5432/postgres. BENCH_EVENTS, BENCH_RUNS override.
// BENCH_WITHOUT_SEARCH_INDEXES=1 drops the payload/error-text GIN indexes first, to show what
// they cost every status change (an update that changes indexed columns is never HOT).
import { pino } from 'pino';
import pg from 'pg';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import { createPolicyCache } from '../src/retry/policyCache.ts';
import { runRetryPass } from '../src/retry/runRetryPass.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BATCH = 100;
const CONCURRENCY = 10;
const logger = pino({ level: 'warn' });

const name = `lazarus_bench_${process.pid}`;
const dbUrl = await createDatabase(adminUrl, name);

try {
  await migrate(dbUrl, { logger });
  if (process.env.BENCH_WITHOUT_SEARCH_INDEXES === '1') {
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    await c.query('drop index dead_letters_payload_gin, dead_letters_error_message_trgm, dead_letters_error_fts');
    await c.end();
  }
  const handle = createDb(dbUrl, { poolMax: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: 'lazarus-retry' });
  const pool = new pg.Pool({ connectionString: dbUrl, max: 2 });
  pool.on('error', () => {});

  const seed = async () => {
    await pool.query('truncate dead_letters, delivery_attempts restart identity');
    await pool.query(`
      insert into dead_letters (event_type, payload, error_message, error_stack)
      select 'order.placed',
             jsonb_build_object('orderId', g, 'customer', 'c-' || g, 'lines', (select jsonb_agg(jsonb_build_object('sku', 'SKU-' || i, 'qty', i, 'note', repeat('x', 40))) from generate_series(1, 12) i)),
             'HTTP 503 from inventory-service',
             repeat('    at processOrder (/app/src/consumers/orders.ts:123:45)' || chr(10), 36)
        from generate_series(1, $1::int) g`, [EVENTS]);
    await pool.query('vacuum analyze dead_letters');
  };

  const lazarus = async () => {
    const deps = {
      db: handle.db, logger, inProcessEventTypes: ['order.placed'], policies: createPolicyCache(handle.db, 1_000),
      deliver: async () => ({ ok: true as const, statusCode: null, responseBody: null }),
      config: { workerId: 'bench', batchSize: BATCH, concurrency: CONCURRENCY, leaseSeconds: 30 },
    };
    let done = 0;
    for (;;) {
      const s = await runRetryPass(deps);
      done += s.succeeded;
      if (s.claimed === 0) return done;
    }
  };

  // The limit: the same writes (batched SKIP LOCKED claim with lease, fenced completion, attempt
  // rows) as plain SQL with no engine around it.
  const raw = async () => {
    let done = 0;
    for (;;) {
      const claimed = await pool.query<{ id: string; lease_token: string; attempts: number }>(`
        with due as materialized (
          select id from dead_letters where status = 'PENDING' and next_attempt_at <= now()
           order by next_attempt_at, id limit $1 for update skip locked)
        update dead_letters d set status = 'PROCESSING', attempts = d.attempts + 1, lease_owner = 'raw',
               lease_token = gen_random_uuid(), lease_expires_at = now() + interval '30 seconds'
          from due where d.id = due.id returning d.id, d.lease_token, d.attempts, d.payload`, [BATCH]);
      if (claimed.rowCount === 0) return done;
      const r = await pool.query(`
        with done as (
          update dead_letters d set status = 'SUCCEEDED', next_attempt_at = null, lease_owner = null, lease_token = null, lease_expires_at = null
            from unnest($1::bigint[], $2::uuid[]) as i(id, token)
           where d.id = i.id and d.lease_token = i.token and d.status = 'PROCESSING' returning d.id, d.attempts),
        a as (insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, duration_ms, outcome)
              select id, attempts, 'raw', 0, 'SUCCEEDED' from done)
        select count(*)::int as n from done`, [claimed.rows.map((c) => c.id), claimed.rows.map((c) => c.lease_token)]);
      done += r.rows[0].n;
    }
  };

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const results: Record<string, number[]> = { lazarus: [], raw: [] };
  for (let run = 1; run <= RUNS; run++) {
    for (const [label, drain] of [['lazarus', lazarus], ['raw', raw]] as const) {
      await seed();
      const started = performance.now();
      const n = await drain();
      const seconds = (performance.now() - started) / 1000;
      if (n !== EVENTS) throw new Error(`${label} drained ${n} of ${EVENTS}`);
      results[label]!.push(n / seconds);
      console.log(`run ${run} ${label.padEnd(8)} ${n} events in ${seconds.toFixed(2)} s = ${Math.round(n / seconds)} events/s`);
    }
  }
  const lz = median(results.lazarus!);
  const rw = median(results.raw!);
  console.log(`\nmedian of ${RUNS}: lazarus ${Math.round(lz)}/s, raw SQL ${Math.round(rw)}/s, ratio ${(lz / rw).toFixed(2)}`);
  await pool.end();
  await handle.close();
} finally {
  await dropDatabase(adminUrl, name);
}
