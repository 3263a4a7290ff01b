// npm run bench:retry:hot-table — what a narrow queue table would buy (issue #6, the peer bar), and
// where the wide table's cost is. bench:retry's "raw SQL" loop (bench/rawDrain.ts) drains the
// same 50,000 events (~1 KB payload, ~2 KB stack, random enough not to compress away) once per
// variant, each on a freshly migrated schema:
//   wide              on dead_letters itself, as the engine does today: every status change
//                     writes a new version of the whole row and an entry in each of its 17 indexes
//   wide, no payload GIN        the same without dead_letters_payload_gin
//   wide, queue indexes only    the same with only the indexes the loop needs (primary key,
//                               dedupe key, change cursor, status/due and lease)
//   narrow            on a table holding only the queue state (status, attempts, next attempt,
//                     lease) with two partial indexes, the payload read from dead_letters by join
//   narrow, as Lazarus would need it   the same table with what the split (docs/queue-state-split.md)
//                     would add to it: the read side's indexes on state (status, updated,
//                     attempts, next attempt, change cursor), the row stamp (change cursor,
//                     version, updated_at), the rollup trigger (joining dead_letters for the
//                     dimensions) and the NOTIFY hint
// with the WAL each drain wrote (pg_stat_wal). A measurement for a design decision, not an engine:
// the narrow loop leaves dead_letters' own status untouched, and the index-less variants break
// the read side. BENCH_DATABASE_URL (admin URL; a scratch database is created and dropped),
// BENCH_EVENTS (50,000), BENCH_RUNS (2).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';
import { completeSql, drainRaw, narrowClaim, WIDE_CLAIM } from './rawDrain.ts';

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
}

interface Drained {
  perSecond: number;
  walRecordsPerEvent: number;
  walKbPerEvent: number;
}

const walStats = async () => (await pool.query<{ records: string; bytes: string }>(`select wal_records as records, wal_bytes as bytes from pg_stat_wal`)).rows[0]!;

/** Drains every event with the raw loop, timed, with the WAL it wrote. */
async function drain(claimSql: string, completeStatement: string): Promise<Drained> {
  const wal = await walStats();
  const started = performance.now();
  const done = await drainRaw(pool, claimSql, completeStatement);
  const seconds = (performance.now() - started) / 1000;
  if (done !== N) throw new Error(`drained ${done} of ${N}`);
  const after = await walStats();
  return {
    perSecond: N / seconds,
    walRecordsPerEvent: (Number(after.records) - Number(wal.records)) / N,
    walKbPerEvent: (Number(after.bytes) - Number(wal.bytes)) / N / 1024,
  };
}

const drainWide = () => drain(WIDE_CLAIM, completeSql('dead_letters'));
const drainNarrow = () => drain(narrowClaim('hot', 'bench.evt'), completeSql('hot'));

// Everything on dead_letters but what the loop itself needs (the read side's indexes).
const READ_SIDE_INDEXES = [
  'dead_letters_attempts_idx', 'dead_letters_created_idx', 'dead_letters_error_kind_created_idx', 'dead_letters_error_signature_idx',
  'dead_letters_event_type_created_idx', 'dead_letters_next_attempt_order_idx', 'dead_letters_ordering_idx', 'dead_letters_payload_gin',
  'dead_letters_queue_created_idx', 'dead_letters_source_created_idx', 'dead_letters_updated_idx',
];

// What the state table of the split would carry besides the loop's own indexes.
const LAZARUS_STATE_TABLE = `
  alter table hot add column version int not null default 0, add column updated_at timestamptz not null default now(),
    add column change_id bigint not null default nextval('lazarus_change_seq'), add column change_xid xid8 not null default pg_current_xact_id();
  create index hot_status on hot (status, next_attempt_at, id);
  create index hot_updated on hot (updated_at, id);
  create index hot_attempts on hot (attempts, id);
  create index hot_next on hot ((coalesce(next_attempt_at, 'infinity'::timestamptz)), id);
  create index hot_change on hot (change_xid, change_id);
  create function hot_stamp() returns trigger language plpgsql as $$ begin
    NEW.change_id := nextval('lazarus_change_seq'); NEW.change_xid := pg_current_xact_id();
    NEW.version := OLD.version + 1; NEW.updated_at := now(); return NEW; end $$;
  create trigger hot_stamp before update on hot for each row execute function hot_stamp();
  create trigger hot_notify after update on hot referencing new table as changed for each statement execute function tg_lazarus__notify();
  create function hot_rollup() returns trigger language plpgsql as $$ begin
    insert into dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
    select lazarus_rollup_bucket(e.created_at), e.event_type, e.queue, e.error_kind, c.status::"DeadLetterStatus", sum(c.n), sum(c.a)
      from (select id, status, 1 as n, attempts::bigint as a from new_rows
            union all select id, status, -1, -attempts::bigint from old_rows) c
      join dead_letters e on e.id = c.id
     group by 1, 2, 3, 4, 5 having sum(c.n) <> 0 or sum(c.a) <> 0;
    return null; end $$;
  create trigger hot_rollup after update on hot referencing old table as old_rows new table as new_rows
    for each statement execute function hot_rollup();`;

const VARIANTS: Array<{ name: string; drop: string[]; run: () => Promise<Drained>; prepare?: string }> = [
  { name: 'wide (dead_letters as it is)', drop: [], run: drainWide },
  { name: 'wide, no payload GIN', drop: ['dead_letters_payload_gin'], run: drainWide },
  { name: 'wide, queue indexes only', drop: READ_SIDE_INDEXES, run: drainWide },
  { name: 'narrow queue table', drop: [], run: drainNarrow },
  { name: 'narrow, as Lazarus would need it', drop: [], run: drainNarrow, prepare: LAZARUS_STATE_TABLE },
];

const results = new Map<string, Drained[]>(VARIANTS.map((v) => [v.name, []]));
try {
  for (let i = 0; i < RUNS; i++) {
    for (const variant of VARIANTS) {
      await pool.query('drop schema public cascade; create schema public');
      await migrate(url);
      for (const index of variant.drop) await pool.query(`drop index ${index}`);
      await seed();
      if (variant.prepare) {
        await pool.query(variant.prepare);
        await pool.query('vacuum analyze hot');
      }
      const drained = await variant.run();
      results.get(variant.name)!.push(drained);
      process.stderr.write(`run ${i + 1}, ${variant.name}: ${Math.round(drained.perSecond)} events/s\n`);
    }
  }
  const median = (xs: number[]) => xs.toSorted((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
  const base = median(results.get(VARIANTS[0]!.name)!.map((r) => r.perSecond));
  console.log(`\n${N} events, ${RUNS} runs; medians (lower median for an even count)\n`);
  console.log('| Variant | Events/s | Per run | × wide | WAL records / event | WAL KB / event |');
  console.log('| --- | ---: | --- | ---: | ---: | ---: |');
  for (const [name, runs] of results) {
    const rate = median(runs.map((r) => r.perSecond));
    console.log(`| ${name} | ${Math.round(rate).toLocaleString('en')} | ${runs.map((r) => Math.round(r.perSecond).toLocaleString('en')).join(', ')} | ${(rate / base).toFixed(1)} | ${median(runs.map((r) => r.walRecordsPerEvent)).toFixed(0)} | ${median(runs.map((r) => r.walKbPerEvent)).toFixed(1)} |`);
  }
} finally {
  await pool.end();
  await dropDatabase(adminUrl, name);
}
