// Seeds millions of dead letters fast, into a freshly migrated, empty database, leaving it exactly
// as if every row had been inserted through the table's triggers: 10M rows in minutes instead of
// the hour and more the trigger path takes (1M took 5-6 min through the triggers on this machine).
//
// How:
//  1. Refuse unless dead_letters is empty and the INSERT triggers on every table written here are
//     exactly the ones this file rebuilds (KNOWN_INSERT_TRIGGERS): a new trigger must be taught here
//     first, or its side effects would be missing without anyone noticing.
//  2. Drop the secondary indexes of dead_letters, its state table and the two side tables that
//     grow with it (error texts, history); primary keys stay.
//  3. Load in chunks on several connections with session_replication_role = replica (no triggers),
//     each chunk one statement that does in CTEs what the triggers do per statement:
//       tg_dead_letters__state_insert     one dead_letter_states row per event, from the inserted
//                                         status, attempts and next attempt
//       tg_dead_letter_states__stamp      change_id, change_xid: the columns' defaults (the same
//                                         sequence and pg_current_xact_id()); resolved_at set to
//                                         now() for SUCCEEDED, RESOLVED and DISCARDED rows
//       tg_dead_letters__error_texts_insert   one dead_letter_error_texts row per event
//       tg_dead_letters__recorded         one RECORDED history row, actor 'sql:' || session_user,
//                                         at the event's created_at
//       tg_dead_letter_states__notify_insert  nothing to rebuild: a hint, never state
//       tg_dead_letters__derive_signature error_signature, from the same function of the message
//       tg_dead_letters__error_group_id   error_group_id, from the same function of the same key
//     Row g gets id g (chunks run side by side, so the sequence would interleave them), and the id
//     sequence is set past the last one.
//  4. VACUUM the loaded tables (hint bits and visibility map, before anything reads the heap).
//  5. On the same connections, one queue, longest first: recreate the indexes from their saved
//     definitions (maintenance_work_mem up), and build tg_dead_letters__rollup_insert's two ledgers
//     set-based, one row per group aggregated from the table (what lazarus_compact_rollups() leaves
//     after the trigger path), and tg_dead_letters__error_groups_insert's ledger the same way,
//     folded into error_groups by the service's own folder (lazarus_fold_error_groups). Then ANALYZE.
// verifyDerivedTables() then compares the ledgers with a scan of dead_letters, group by group, and
// the side tables with dead_letters by count and checksums. test/bench.bulkLoadDeadLetters.test.ts
// loads the same rows both ways and compares every table.
import pg from 'pg';
import { SYNTHETIC_COLUMNS, syntheticDeadLettersSelect, type CreatedOrder, type StatusMix } from './syntheticDeadLetters.ts';

/** Per table, the INSERT triggers whose effects this loader rebuilds. Any other one stops the load. */
export const KNOWN_INSERT_TRIGGERS: Record<string, string[]> = {
  dead_letters: [
    'tg_dead_letters__derive_signature', 'tg_dead_letters__error_group_id', 'tg_dead_letters__error_groups_insert',
    'tg_dead_letters__error_texts_insert', 'tg_dead_letters__recorded',
    'tg_dead_letters__rollup_insert', 'tg_dead_letters__state_insert',
  ],
  dead_letter_states: ['tg_dead_letter_states__notify_insert', 'tg_dead_letter_states__stamp'],
  error_group_deltas: [],
  dead_letter_error_texts: [],
  dead_letter_actions: [],
  dead_letter_rollups: [],
  dead_letter_signature_rollups: [],
};
const INDEXED_TABLES = ['dead_letters', 'dead_letter_states', 'dead_letter_error_texts', 'dead_letter_actions'];

export interface BulkLoadOptions {
  url: string;
  rows: number;
  mix?: StatusMix;
  /** The time the rows' times count back from (created_at over the 30 days before it). Default: the start. */
  now?: Date;
  /**
   * resolved_at of the finished rows: 'now' (default), as the stamp trigger sets it on insert; or
   * 'updated', a minute after the row's created_at, so that with `now` in the past the rows
   * finished long ago (what a retention pass finds).
   */
  resolvedAt?: 'now' | 'updated';
  /** 'scattered' (default), or 'time': created_at rises with the id (see CreatedOrder). */
  createdOrder?: 'scattered' | 'time';
  /** Rows per statement. Default 100,000. */
  chunkRows?: number;
  /** Connections that load and build indexes at once. Default 2. */
  connections?: number;
  /** maintenance_work_mem of each index-building connection. Default '512MB'. */
  maintenanceWorkMem?: string;
  log?: (line: string) => void;
}

export interface BulkLoadTimings {
  loadSeconds: number;
  vacuumSeconds: number;
  /** The rollups, the error groups and the indexes, built side by side. */
  buildSeconds: number;
  analyzeSeconds: number;
  totalSeconds: number;
}

/** The trigger path, for comparison and small seeds: one INSERT … SELECT through every trigger. */
// Through dead_letters_current, because updated_at lives on the state row; its INSTEAD OF trigger
// inserts the state row, then the event row, whose own triggers then run as for any insert.
export async function insertThroughTriggers(client: pg.ClientBase, lo: number, hi: number, now: Date, mix: StatusMix = 'read'): Promise<void> {
  await client.query(`insert into dead_letters_current (${SYNTHETIC_COLUMNS.join(', ')}) ${syntheticDeadLettersSelect(mix)}`, [lo, hi, now]);
}

/** The synthetic columns that live on dead_letters itself (the state is the state row's). */
const STATE_COLUMNS: readonly string[] = ['status', 'attempts', 'next_attempt_at', 'updated_at'];
const EVENT_COLUMNS = SYNTHETIC_COLUMNS.filter((c) => !STATE_COLUMNS.includes(c));

// tg_dead_letters__error_group_id's group id is computed once per distinct (event type, error kind,
// message signature, stack) of a chunk, not once per row: per row, the stack frames and the md5 cost
// 1.5 s of CPU per 100,000 rows here, a third of the load. The message signature, computed once per
// row, is also what the loader writes into error_signature (triggers are off, and the column is no
// longer generated). A missing stack and an empty one have no frames, so give the same group
// signature: '' stands for null in the join key.
const chunkSql = (mix: StatusMix, resolvedAt: 'now' | 'updated', order: CreatedOrder) => `
with r as materialized (
  select r.*, case when r.status in ('SUCCEEDED', 'RESOLVED', 'DISCARDED') then ${resolvedAt === 'now' ? 'now()' : 'r.updated_at'} end as resolved_at,
         lazarus_error_signature(r.error_message) as signature, coalesce(r.error_stack, '') as stack_key
    from (${syntheticDeadLettersSelect(mix, true, order)}) r(id, ${SYNTHETIC_COLUMNS.join(', ')})
), groups as (
  select event_type, error_kind, signature, stack_key,
         lazarus_error_group_id(event_type, error_kind::"ErrorKind", lazarus_group_signature(null, signature, stack_key)) as group_id
    from r group by 1, 2, 3, 4
), added as (
  insert into dead_letters (id, ${EVENT_COLUMNS.join(', ')}, error_signature, error_group_id)
  select r.id, ${EVENT_COLUMNS.map((c) => `r.${c}`).join(', ')}, r.signature, g.group_id
    from r join groups g using (event_type, error_kind, signature, stack_key)
  returning id, created_at, error_message, error_stack
), states as (
  insert into dead_letter_states (id, event_type, ordering_key, ordering_seq, created_at, status, attempts, next_attempt_at, resolved_at, updated_at)
  select id, event_type, ordering_key, ordering_seq, created_at, status::"DeadLetterStatus", attempts, next_attempt_at, resolved_at, updated_at from r
), texts as (
  insert into dead_letter_error_texts (dead_letter_id, error_message, error_stack)
  select id, error_message, error_stack from added
), recorded as (
  insert into dead_letter_actions (dead_letter_id, action, actor, created_at)
  select id, 'RECORDED', 'sql:' || session_user, created_at from added
)
select count(*)::int as n from added`;

const ROLLUPS_SQL = (view: string) => `
insert into dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
select lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, count(*), sum(attempts)
  from ${view} group by 1, 2, 3, 4, 5`;
const SIGNATURE_ROLLUPS_SQL = `
insert into dead_letter_signature_rollups (bucket, error_signature, event_type, queue, error_kind, count)
select lazarus_rollup_bucket(created_at), error_signature, event_type, queue, error_kind, count(*)
  from dead_letters group by 1, 2, 3, 4, 5`;

// The trigger's own SELECT over the whole table (the synthetic rows set no fingerprint).
const GROUP_DELTAS_SQL = (view: string) => `
insert into error_group_deltas (group_id, event_type, error_kind, signature, bucket, total, unresolved, failures, requeued,
                                first_seen, last_seen, queues, sources, sample_id)
select error_group_id, event_type, error_kind,
       lazarus_group_signature(min(fingerprint), min(error_signature), max(error_stack collate "C")), lazarus_rollup_bucket(created_at),
       count(*), sum(lazarus_is_unresolved(status)), sum(lazarus_is_unresolved(status)), 0,
       min(created_at), max(created_at), array_agg(distinct queue), array_agg(distinct source), min(id)
  from ${view} group by error_group_id, event_type, error_kind, lazarus_rollup_bucket(created_at)`;

/** Folds the whole error-group ledger, as the service's folder would. */
export async function foldAllErrorGroups(client: pg.ClientBase): Promise<void> {
  for (;;) {
    const { rows: [r] } = await client.query<{ taken: number }>('select taken from lazarus_fold_error_groups(1000000)');
    if (r!.taken === 0) return;
    if (r!.taken < 0) throw new Error('bulk load: another folder holds the error-group lock');
  }
}

async function connect(url: string, settings: string[] = []): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'lazarus-bulk-load' });
  await client.connect();
  for (const s of settings) await client.query(s);
  return client;
}

/** Runs tasks on `clients`, each client taking the next task when it is free. */
async function runOnEach<T>(clients: pg.Client[], tasks: T[], run: (client: pg.Client, task: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(clients.map(async (client) => {
    while (next < tasks.length) await run(client, tasks[next++]!);
  }));
}

export async function assertKnownTriggers(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ table: string; name: string }>(`
    select c.relname as table, t.tgname as name from pg_trigger t join pg_class c on c.oid = t.tgrelid
     where c.relname = any($1::text[]) and not t.tgisinternal and (t.tgtype & 4) <> 0 order by 1, 2`, [Object.keys(KNOWN_INSERT_TRIGGERS)]);
  const unknown = rows.filter((r) => !KNOWN_INSERT_TRIGGERS[r.table]!.includes(r.name));
  const missing = Object.entries(KNOWN_INSERT_TRIGGERS).flatMap(([table, names]) =>
    names.filter((n) => !rows.some((r) => r.table === table && r.name === n)).map((name) => ({ table, name })));
  if (unknown.length || missing.length) {
    throw new Error(`bulk load: the INSERT triggers changed (unknown: ${unknown.map((r) => `${r.table}.${r.name}`).join(', ') || 'none'}; ` +
      `missing: ${missing.map((r) => `${r.table}.${r.name}`).join(', ') || 'none'}). Teach bench/bulkLoadDeadLetters.ts what they build, then update KNOWN_INSERT_TRIGGERS.`);
  }
}

export async function bulkLoadDeadLetters(options: BulkLoadOptions): Promise<BulkLoadTimings> {
  const { url, rows, mix = 'read', now = new Date(), resolvedAt = 'now', createdOrder = 'scattered', chunkRows = 100_000, connections = 2, maintenanceWorkMem = '512MB' } = options;
  const log = options.log ?? (() => {});
  const admin = await connect(url);
  const clients: pg.Client[] = [];
  const started = performance.now();
  const since = (t: number) => (performance.now() - t) / 1000;
  try {
    await assertKnownTriggers(admin);
    const { rows: [existing] } = await admin.query<{ n: number }>('select count(*)::int as n from (select 1 from dead_letters limit 1) x');
    if (existing!.n > 0) throw new Error('bulk load: dead_letters is not empty; load into a freshly migrated database');
    const { rows: indexes } = await admin.query<{ name: string; def: string; gin: boolean; table: string }>(`
      select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as def, am.amname = 'gin' as gin, c.relname as table
        from pg_index i join pg_class c on c.oid = i.indrelid join pg_class ic on ic.oid = i.indexrelid join pg_am am on am.oid = ic.relam
       where c.relname = any($1::text[]) and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)`, [INDEXED_TABLES]);
    for (const index of indexes) await admin.query(`drop index ${index.name}`);

    for (let i = 0; i < connections; i++) {
      clients.push(await connect(url, ['set session_replication_role = replica', 'set synchronous_commit = off']));
    }
    const chunks: Array<[number, number]> = [];
    for (let lo = 1; lo <= rows; lo += chunkRows) chunks.push([lo, Math.min(rows, lo + chunkRows - 1)]);
    let t = performance.now();
    let loaded = 0;
    const sql = chunkSql(mix, resolvedAt, createdOrder === 'scattered' ? 'scattered' : { inOrderOf: rows });
    await runOnEach(clients, chunks, async (client, [lo, hi]) => {
      const { rows: [r] } = await client.query<{ n: number }>(sql, [lo, hi, now]);
      loaded += r!.n;
      log(`loaded ${loaded} rows (${since(started).toFixed(0)} s)`);
    });
    // Chunks run side by side, so ids are given (row g gets id g, as one-by-one inserts would) and
    // the id sequence is moved past them.
    await admin.query(`select setval(pg_get_serial_sequence('dead_letters', 'id'), $1)`, [rows]);
    const loadSeconds = since(t);

    t = performance.now();
    const loadedTables = ['dead_letters', 'dead_letter_states', 'dead_letter_error_texts', 'dead_letter_actions'];
    await runOnEach(clients, loadedTables, async (client, table) => { await client.query(`vacuum ${table}`); });
    const vacuumSeconds = since(t);
    log(`vacuumed (${since(started).toFixed(0)} s)`);

    // The rollups and the index builds only read the loaded tables, so they share one queue: no
    // connection waits for another phase to end (the rollups and the error-group fold left one
    // connection idle for most of their 90 s at 10M rows). Longest first: the GIN builds (2-3 min
    // each at 10M rows), then the aggregates, then the btrees.
    t = performance.now();
    for (const client of clients) {
      await client.query(`set maintenance_work_mem = '${maintenanceWorkMem}'`);
      await client.query('set max_parallel_maintenance_workers = 0'); // the connections are the parallelism
    }
    const indexTask = (index: (typeof indexes)[number]) => ({ name: `index ${index.name}`, run: (client: pg.Client) => client.query(index.def) });
    const byTable = (a: (typeof indexes)[number], b: (typeof indexes)[number]) => Number(b.table === 'dead_letters') - Number(a.table === 'dead_letters');
    const view = await currentStateView(admin);
    const tasks: Array<{ name: string; run: (client: pg.Client) => Promise<unknown> }> = [
      ...indexes.filter((i) => i.gin).sort(byTable).map(indexTask),
      { name: 'rollups', run: (client) => client.query(ROLLUPS_SQL(view)) },
      { name: 'signature rollups', run: (client) => client.query(SIGNATURE_ROLLUPS_SQL) },
      // The fold runs on the admin connection: its own writes go through error_groups' triggers.
      { name: 'error groups', run: async (client) => { await client.query(GROUP_DELTAS_SQL(view)); await foldAllErrorGroups(admin); } },
      ...indexes.filter((i) => !i.gin).sort(byTable).map(indexTask),
    ];
    await runOnEach(clients, tasks, async (client, task) => {
      const s = performance.now();
      await task.run(client);
      log(`${task.name}: ${since(s).toFixed(1)} s (${since(started).toFixed(0)} s)`);
    });
    const buildSeconds = since(t);

    t = performance.now();
    const built = ['dead_letter_rollups', 'dead_letter_signature_rollups'];
    await runOnEach(clients, [...loadedTables.map((table) => `analyze ${table}`), ...built.map((table) => `vacuum analyze ${table}`)],
      async (client, statement) => { await client.query(statement); });
    const analyzeSeconds = since(t);
    return { loadSeconds, vacuumSeconds, buildSeconds, analyzeSeconds, totalSeconds: since(started) };
  } finally {
    await Promise.all([admin, ...clients].map((c) => c.end()));
  }
}

export interface DerivedTablesCheck {
  rollupGroups: number;
  rollupGroupsDiffering: number;
  signatureGroups: number;
  signatureGroupsDiffering: number;
  errorGroups: number;
  errorGroupsDiffering: number;
  deadLetters: string;
  errorTexts: string;
  recorded: string;
}

/**
 * The view of every event with its current state: dead_letters_current since migration
 * 20261203110000_state_only_in_states, lazarus_dead_letters before it (bench:upgrade seeds the
 * previous release's schema).
 */
async function currentStateView(client: pg.ClientBase): Promise<string> {
  const { rows: [row] } = await client.query<{ view: string }>(
    `select coalesce(to_regclass('dead_letters_current'), to_regclass('lazarus_dead_letters'))::text as view`);
  return row!.view;
}

/**
 * Compares what the INSERT triggers maintain with a scan of dead_letters: both rollup ledgers
 * group by group (count and attempts, summed over ledger rows), the folded error groups' counts, the error-text side table and the
 * RECORDED history rows by count and checksums. Throws when anything differs.
 */
export async function verifyDerivedTables(url: string): Promise<DerivedTablesCheck> {
  const clients = await Promise.all([connect(url), connect(url)]);
  try {
    const view = await currentStateView(clients[0]!);
    const [rollups, signatures, sides] = [
      `with scan as (select lazarus_rollup_bucket(created_at) as bucket, event_type, queue, error_kind, status, count(*) as count, sum(attempts) as attempts
                       from ${view} group by 1, 2, 3, 4, 5),
            ledger as (select bucket, event_type, queue, error_kind, status, sum(count) as count, sum(attempts) as attempts
                         from dead_letter_rollups group by 1, 2, 3, 4, 5 having sum(count) <> 0 or sum(attempts) <> 0)
       select count(*)::int as groups, count(*) filter (where s.count is distinct from l.count or s.attempts is distinct from l.attempts)::int as differing
         from scan s full join ledger l using (bucket, event_type, queue, error_kind, status)`,
      `with scan as (select lazarus_rollup_bucket(created_at) as bucket, error_signature, event_type, queue, error_kind, count(*) as count
                       from dead_letters group by 1, 2, 3, 4, 5),
            ledger as (select bucket, error_signature, event_type, queue, error_kind, sum(count) as count
                         from dead_letter_signature_rollups group by 1, 2, 3, 4, 5 having sum(count) <> 0)
       select count(*)::int as groups, count(*) filter (where s.count is distinct from l.count)::int as differing
         from scan s full join ledger l using (bucket, error_signature, event_type, queue, error_kind)`,
      `select (select concat_ws(' ', count(*), coalesce(sum(id), 0), coalesce(sum(length(error_message)), 0), coalesce(sum(length(error_stack)), 0),
                                 coalesce(sum(extract(epoch from created_at)), 0)::bigint)
                 from dead_letters) as dead_letters,
              (select concat_ws(' ', count(*), coalesce(sum(dead_letter_id), 0), coalesce(sum(length(error_message)), 0), coalesce(sum(length(error_stack)), 0))
                 from dead_letter_error_texts) as error_texts,
              (select concat_ws(' ', count(*), coalesce(sum(dead_letter_id), 0), coalesce(sum(extract(epoch from created_at)), 0)::bigint)
                 from dead_letter_actions where action = 'RECORDED') as recorded`,
    ];
    const groups = `with scan as (select error_group_id as id, count(*) as total, sum(lazarus_is_unresolved(status)) as unresolved
                                      from ${view} group by 1)
       select count(*)::int as groups,
              count(*) filter (where s.total is distinct from g.total_count or s.unresolved is distinct from g.unresolved_count)::int as differing
         from scan s full join error_groups g using (id)`;
    const [a, b] = await Promise.all([clients[0]!.query(rollups), clients[1]!.query(signatures)]);
    const { rows: [g] } = await clients[1]!.query(groups);
    const { rows: [side] } = await clients[0]!.query(sides);
    const check: DerivedTablesCheck = {
      rollupGroups: a.rows[0].groups, rollupGroupsDiffering: a.rows[0].differing,
      signatureGroups: b.rows[0].groups, signatureGroupsDiffering: b.rows[0].differing,
      errorGroups: g.groups, errorGroupsDiffering: g.differing,
      deadLetters: side.dead_letters, errorTexts: side.error_texts, recorded: side.recorded,
    };
    const [n, ids, messages, stacks, created] = check.deadLetters.split(' ');
    const textsMatch = check.errorTexts === [n, ids, messages, stacks].join(' ');
    const recordedMatch = check.recorded === [n, ids, created].join(' ');
    if (check.rollupGroupsDiffering || check.signatureGroupsDiffering || check.errorGroupsDiffering || !textsMatch || !recordedMatch) {
      throw new Error(`derived tables disagree with dead_letters: ${JSON.stringify(check)}`);
    }
    return check;
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}
