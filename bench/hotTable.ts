// npm run bench:retry:hot-table — what each write of the hot loop costs (issue 20 item 3). bench:retry's
// "raw SQL" loop (bench/rawDrain.ts: a batched SKIP LOCKED claim with lease and fencing token, and
// one fenced completion statement per batch that also inserts the attempt rows) drains the same
// 50,000 events (~1 KB payload, ~2 KB stack, random enough not to compress away) once per variant,
// each on a freshly migrated schema, with the WAL each drain wrote (bench/walCount.ts):
//   dead_letter_states as migrated   the narrow state table with every index and trigger it has
//   without <one write>              the same with one index dropped, one trigger disabled, or
//                                    no attempt rows: that write's cost is the difference
//   with the attempts' foreign key   the check the split dropped (it locked the wide row)
//   the stamp in a BEFORE UPDATE     as before migration 20261130100000, when a row trigger
//   row trigger                      stamped every update (PostgreSQL locks the row for it)
//   the four read-side indexes full  as before migration 20261128120000, when a claim's
//                                    PROCESSING row version entered each of them
//   pages filled to the brim         as before migration 20261129100000 (fillfactor 100, set
//                                    before the seed): an update then moves the row to another
//                                    page, and WAL-logs a lock on the old version to do so
//   bare narrow table                a table holding only the queue state with two partial
//                                    indexes and no triggers: the floor
// Besides events/s and WAL, each drain reports the CPU its two PostgreSQL backends used per event
// (/proc/<pid>/stat, when the server runs on this machine): on a shared machine the backend's own
// CPU moves far less between runs than events/s or WAL records (page pruning and index cleanup
// land in whichever drain fills the page). Every other round runs the variants in reverse order.
// A measurement for a design decision, not an engine: the variants without a write break what
// that write is for. BENCH_DATABASE_URL (admin URL; a scratch database is created and dropped),
// BENCH_EVENTS (50,000), BENCH_RUNS (2), BENCH_VARIANTS (comma-separated parts of variant names: only
// those, and the first variant, run).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import { completeSql, drainRaw, narrowClaim } from './rawDrain.ts';
import { cpuMsOf } from './triggerCost.ts';
import { walPosition, walSince } from './walCount.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const N = Number(process.env.BENCH_EVENTS ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 2);
const name = `lazarus_hot_${randomBytes(4).toString('hex')}`;
const url = await createDatabase(adminUrl, name);
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
  await pool.query(`vacuum analyze dead_letter_states`);
}

interface Drained {
  perSecond: number;
  /** CPU of the pool's backends per event, null where /proc cannot tell. */
  backendCpuUsPerEvent: number | null;
  walRecordsPerEvent: number;
  walKbPerEvent: number;
}

/** Drains every event with the raw loop, timed, with the WAL it wrote. */
async function drain(claimSql: string, completeStatement: string): Promise<Drained> {
  // Both of the pool's connections open now, so the drain runs on backends whose CPU is read here.
  const clients = await Promise.all([pool.connect(), pool.connect()]);
  const pids = await Promise.all(clients.map(async (c) => (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid));
  for (const c of clients) c.release();
  const cpuMs = async () => {
    const each = await Promise.all(pids.map(cpuMsOf));
    return each.every((ms) => ms !== null) ? each.reduce((a, b) => a! + b!, 0)! : null;
  };
  const walFrom = await walPosition(pool);
  const cpuBefore = await cpuMs();
  const started = performance.now();
  const done = await drainRaw(pool, claimSql, completeStatement);
  const seconds = (performance.now() - started) / 1000;
  if (done !== N) throw new Error(`drained ${done} of ${N}`);
  const cpuAfter = await cpuMs();
  const wal = await walSince(pool, walFrom);
  return {
    perSecond: N / seconds,
    backendCpuUsPerEvent: cpuBefore === null || cpuAfter === null ? null : ((cpuAfter - cpuBefore) * 1000) / N,
    walRecordsPerEvent: wal.records / N,
    walKbPerEvent: wal.bytes / N / 1024,
  };
}

const drainStates = () => drain(narrowClaim('dead_letter_states', 'bench.evt'), completeSql('dead_letter_states'));
const drainStatesWithoutAttempts = () => drain(narrowClaim('dead_letter_states', 'bench.evt'), completeSql('dead_letter_states', { attemptRows: false }));
const drainNarrow = () => drain(narrowClaim('hot', 'bench.evt'), completeSql('hot'));

const dropIndex = (index: string) => `drop index ${index}`;
const disableTrigger = (trigger: string) => `alter table dead_letter_states disable trigger ${trigger}`;

// The stamp as a BEFORE UPDATE row trigger, as before migration 20261130100000: PostgreSQL locks the
// old row version for it (a Heap/LOCK record) and runs it for every row. The statements still stamp
// too and the trigger's stamp replaces theirs, so this variant pays for both: a little more than
// the old code did.
const BEFORE_UPDATE_STAMP = `drop trigger tg_dead_letter_states__stamp on dead_letter_states;
  create trigger tg_dead_letter_states__stamp before insert or update on dead_letter_states
    for each row execute function tg_dead_letter_states__stamp()`;

// The read-side indexes as they were before migration 20261128120000_partial_read_indexes: full,
// so that a claim's PROCESSING row version entered each of them too.
const FULL_READ_INDEXES = [
  ['attempts_idx', '(attempts, id)'], ['updated_idx', '(updated_at, id)'],
  ['next_attempt_order_idx', "(coalesce(next_attempt_at, 'infinity'::timestamptz), id)"], ['status_next_attempt_idx', '(status, next_attempt_at, id)'],
].map(([index, columns]) => `drop index dead_letter_states_${index};
  create index dead_letter_states_${index} on dead_letter_states ${columns};`).join('\n');

const VARIANTS: Array<{ name: string; run: () => Promise<Drained>; prepare?: string; beforeSeed?: string }> = [
  { name: 'dead_letter_states as migrated', run: drainStates },
  { name: 'without the attempt rows', run: drainStatesWithoutAttempts },
  { name: 'with the attempts\' foreign key to dead_letters (before the split)', run: drainStates,
    prepare: 'alter table delivery_attempts add foreign key (dead_letter_id) references dead_letters (id) on delete cascade' },
  { name: 'the stamp in a BEFORE UPDATE row trigger (before 20261130100000)', run: drainStates, prepare: BEFORE_UPDATE_STAMP },
  { name: 'without the rollup and error-group deltas', run: drainStates, prepare: disableTrigger('tg_dead_letter_states__transitions') },
  { name: 'without the update trigger (the unstamped-row check and the NOTIFY hint)', run: drainStates,
    prepare: disableTrigger('tg_dead_letter_states__update') },
  { name: 'without change_cursor_idx', run: drainStates, prepare: dropIndex('dead_letter_states_change_cursor_idx') },
  { name: 'without finished_idx', run: drainStates, prepare: dropIndex('dead_letter_states_finished_idx') },
  { name: 'without status_next_attempt_idx', run: drainStates, prepare: dropIndex('dead_letter_states_status_next_attempt_idx') },
  { name: 'without updated_idx', run: drainStates, prepare: dropIndex('dead_letter_states_updated_idx') },
  { name: 'without attempts_idx', run: drainStates, prepare: dropIndex('dead_letter_states_attempts_idx') },
  { name: 'without next_attempt_order_idx', run: drainStates, prepare: dropIndex('dead_letter_states_next_attempt_order_idx') },
  { name: 'without status_created_idx (before 20261201100000)', run: drainStates, prepare: dropIndex('dead_letter_states_status_created_idx') },
  { name: 'the four read-side indexes full (before 20261128120000: a claim wrote each of them)', run: drainStates,
    prepare: FULL_READ_INDEXES },
  { name: 'pages filled to the brim (fillfactor 100, before 20261129100000)', run: drainStates,
    beforeSeed: 'alter table dead_letter_states reset (fillfactor)' },
  { name: 'bare narrow table', run: drainNarrow },
];

const only = process.env.BENCH_VARIANTS?.split(',');
const RUNNING = VARIANTS.filter((v, i) => i === 0 || !only || only.some((part) => v.name.includes(part)));
const results = new Map<string, Drained[]>(RUNNING.map((v) => [v.name, []]));
try {
  for (let i = 0; i < RUNS; i++) {
    // Every other round runs the variants in reverse, so that no variant always drains first.
    for (const variant of i % 2 === 0 ? RUNNING : [...RUNNING].reverse()) {
      await pool.query('drop schema public cascade; create schema public');
      await migrate(url);
      if (variant.beforeSeed) await pool.query(variant.beforeSeed);
      await seed();
      if (variant.prepare) await pool.query(variant.prepare);
      const drained = await variant.run();
      results.get(variant.name)!.push(drained);
      process.stderr.write(`run ${i + 1}, ${variant.name}: ${Math.round(drained.perSecond)} events/s\n`);
    }
  }
  const median = (xs: number[]) => xs.toSorted((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
  const base = median(results.get(VARIANTS[0]!.name)!.map((r) => r.perSecond));
  console.log(`\n${N} events, ${RUNS} runs; medians (lower median for an even count)\n`);
  console.log('| Variant | Events/s | Per run | × as migrated | Backend CPU µs / event | WAL records / event | WAL KB / event |');
  console.log('| --- | ---: | --- | ---: | ---: | ---: | ---: |');
  for (const [name, runs] of results) {
    const rate = median(runs.map((r) => r.perSecond));
    const cpu = runs.every((r) => r.backendCpuUsPerEvent !== null) ? median(runs.map((r) => r.backendCpuUsPerEvent!)).toFixed(0) : '—';
    console.log(`| ${name} | ${Math.round(rate).toLocaleString('en')} | ${runs.map((r) => Math.round(r.perSecond).toLocaleString('en')).join(', ')} | ${(rate / base).toFixed(1)} | ${cpu} | ${median(runs.map((r) => r.walRecordsPerEvent)).toFixed(1)} | ${median(runs.map((r) => r.walKbPerEvent)).toFixed(1)} |`);
  }
} finally {
  await pool.end();
  await dropDatabase(adminUrl, name);
}
