// npm run bench:retry:hot-table — what a narrow queue table would buy (issue #6, the peer bar).
// The same raw claim/complete loop as bench:retry's "raw SQL" contestant (claim 100 with lease and
// token, fenced completion that also inserts the attempt rows), run twice per round on the same
// 50,000 events (~1 KB payload, ~2 KB stack, random enough not to compress away):
//   wide    on dead_letters itself, as the engine does today: every status change writes a new
//           version of the whole row and an entry in each of its ~17 indexes;
//   narrow  on a table holding only the queue state (status, attempts, next attempt, lease) with
//           two partial indexes, the payload read from dead_letters by join at claim.
// A measurement for a design decision, not an engine: the narrow loop leaves dead_letters' own
// status untouched. BENCH_DATABASE_URL (admin URL; a scratch database is created and dropped),
// BENCH_EVENTS (50,000), BENCH_RUNS (2).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const N = Number(process.env.BENCH_EVENTS ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 2);
const name = `lazarus_hot_${randomBytes(4).toString('hex')}`;
const url = await createDatabase(adminUrl, name);
await migrate(url);
const pool = new pg.Pool({ connectionString: url, max: 2 });
// The scratch database is dropped WITH (FORCE) at the end; an idle client's error then is expected.
pool.on('error', () => {});

const PAYLOAD = `jsonb_build_object('orderId', g, 'customer', jsonb_build_object('id', 'c' || g, 'tier', 'gold'),
  'lines', (select jsonb_agg(jsonb_build_object('sku', 'sku-' || i || '-' || g, 'qty', i, 'price', i * 1.5, 'note', md5((g * i)::text)))
              from generate_series(1, 12) i))`;
const STACK = `(select string_agg('    at handler' || i || ' (/app/src/h' || (g % 97) || '.ts:' || i || ':5) ' || md5((g + i)::text), chr(10))
   from generate_series(1, 30) i)`;

async function seed(): Promise<void> {
  await pool.query(`truncate dead_letters, delivery_attempts restart identity`);
  await pool.query(`
    insert into dead_letters (event_type, payload, error_message, error_stack)
    select 'bench.evt', ${PAYLOAD}, 'HTTP 503 from inventory-service ' || g, ${STACK}
      from generate_series(1, $1::int) g`, [N]);
  await pool.query(`
    drop table if exists hot;
    create table hot (id bigint primary key, event_type text not null, status text not null, attempts int not null default 0,
                      next_attempt_at timestamptz, lease_owner text, lease_token uuid, lease_expires_at timestamptz);
    insert into hot select id, event_type, 'PENDING', 0, now() - interval '1 s' from dead_letters;
    create index hot_due on hot (event_type, next_attempt_at, id) where status = 'PENDING';
    create index hot_lease on hot (lease_expires_at) where status = 'PROCESSING';`);
  await pool.query(`vacuum analyze hot`);
  await pool.query(`vacuum analyze dead_letters`);
}

/** Claims and completes batches of 100 until none is left; returns events per second. */
async function drain(claimSql: string, completeSql: string): Promise<number> {
  let done = 0;
  const started = performance.now();
  for (;;) {
    const claimed = await pool.query<{ id: string; lease_token: string }>(claimSql);
    if (!claimed.rowCount) break;
    const completed = await pool.query<{ n: number }>(completeSql, [claimed.rows.map((c) => c.id), claimed.rows.map((c) => c.lease_token)]);
    done += completed.rows[0]!.n;
  }
  if (done !== N) throw new Error(`drained ${done} of ${N}`);
  return N / ((performance.now() - started) / 1000);
}

const complete = (table: string) => `
  with done as (
    update ${table} t set status = 'SUCCEEDED', next_attempt_at = null, lease_owner = null, lease_token = null, lease_expires_at = null
      from unnest($1::bigint[], $2::uuid[]) as i(id, token)
     where t.id = i.id and t.lease_token = i.token and t.status = 'PROCESSING'
    returning t.id, t.attempts),
  a as (insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, duration_ms, outcome)
        select id, attempts, 'raw', 0, 'SUCCEEDED' from done)
  select count(*)::int as n from done`;
const LEASE = `status = 'PROCESSING', attempts = t.attempts + 1, lease_owner = 'raw', lease_token = gen_random_uuid(),
               lease_expires_at = now() + interval '30 seconds'`;

const drainWide = () => drain(`
  with due as materialized (
    select id from dead_letters where status = 'PENDING' and next_attempt_at <= now()
     order by next_attempt_at, id limit 100 for update skip locked)
  update dead_letters t set ${LEASE} from due where t.id = due.id returning t.id, t.lease_token, t.payload`, complete('dead_letters'));

const drainNarrow = () => drain(`
  with due as materialized (
    select id from hot where status = 'PENDING' and event_type = 'bench.evt' and next_attempt_at <= now()
     order by next_attempt_at, id limit 100 for update skip locked),
  claimed as (update hot t set ${LEASE} from due where t.id = due.id returning t.id, t.lease_token)
  select c.id, c.lease_token, d.payload from claimed c join dead_letters d on d.id = c.id`, complete('hot'));

try {
  for (let i = 0; i < RUNS; i++) {
    await seed();
    const wide = await drainWide();
    await seed();
    const narrow = await drainNarrow();
    console.log(`run ${i + 1}: wide (dead_letters) ${Math.round(wide)} events/s, narrow (queue table) ${Math.round(narrow)} events/s, ${(narrow / wide).toFixed(1)}×`);
  }
} finally {
  await pool.end();
  await dropDatabase(adminUrl, name);
}
