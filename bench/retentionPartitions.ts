// bench:retention's partitioned side (raw SQL, not product code): retain_weeks, a copy of
// dead_letters partitioned by list of status into open (PENDING, PROCESSING, EXHAUSTED) and finished,
// the finished part by range of resolved_at, one partition a week, and the retention that drops
// whole weeks.
import pg from 'pg';
import { RETENTION_APP, type Removal } from './retentionLoad.ts';

const log = (line: string) => process.stderr.write(`${line}\n`);
const since = (t: number) => (performance.now() - t) / 1000;

/** retain_weeks: the same rows, partitioned by status class, the finished ones by week of resolved_at. */
export async function buildPartitionedCopy(url: string): Promise<void> {
  const clients = await Promise.all([0, 1].map(async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`set maintenance_work_mem = '512MB'`);
    await c.query('set synchronous_commit = off');
    return c;
  }));
  const [a, b] = clients as [pg.Client, pg.Client];
  try {
    await a.query(`create table retain_weeks (like dead_letters including defaults including generated) partition by list (status)`);
    // The do-it-yourself table holds the state itself: dead_letters' state columns are inputs only,
    // without defaults (the state trigger applies them), so the copy gets the state defaults back.
    await a.query(`alter table retain_weeks alter column status set default 'PENDING', alter column attempts set default 0,
                     alter column next_attempt_at set default now()`);
    await a.query(`create table retain_weeks_open partition of retain_weeks for values in ('PENDING', 'PROCESSING', 'EXHAUSTED')`);
    await a.query(`create table retain_weeks_finished partition of retain_weeks for values in ('SUCCEEDED', 'RESOLVED', 'DISCARDED')
                   partition by range (resolved_at)`);
    const { rows: weeks } = await a.query<{ name: string; lo: string; hi: string }>(`
      select 'retain_weeks_' || to_char(w, 'YYYYMMDD') as name, w::text as lo, (w + interval '1 week')::text as hi
        from generate_series(date_trunc('week', (select min(resolved_at) from dead_letters_current)), date_trunc('week', now()) + interval '1 week',
                             interval '1 week') w`);
    for (const w of weeks) await a.query(`create table ${w.name} partition of retain_weeks_finished for values from ('${w.lo}') to ('${w.hi}')`);
    const { rows: cols } = await a.query<{ name: string }>(`
      select quote_ident(column_name) as name from information_schema.columns
       where table_name = 'dead_letters' and is_generated = 'NEVER' order by ordinal_position`);
    const list = cols.map((c) => c.name).join(', ');
    const { rows: [range] } = await a.query<{ max: string }>('select coalesce(max(id), 0)::text as max from dead_letters');
    const half = Math.ceil(Number(range!.max) / 2);
    // From the view: dead_letters' state columns are inputs only (NULL), the current state is the view's.
    await Promise.all([a.query(`insert into retain_weeks (${list}) select ${list} from dead_letters_current where id <= $1`, [half]),
      b.query(`insert into retain_weeks (${list}) select ${list} from dead_letters_current where id > $1`, [half])]);
    log(`retain_weeks: rows copied`);
    const { rows: defs } = await a.query<{ def: string }>(`
      select pg_get_indexdef(i.indexrelid) as def from pg_index i
       where i.indrelid = 'dead_letters'::regclass and not i.indisprimary order by pg_relation_size(i.indexrelid) desc`);
    const statements = [...defs.map((d) => d.def.replace(/^CREATE (UNIQUE )?INDEX (\S+) ON public\.dead_letters /, 'CREATE INDEX retain_weeks_$2 ON retain_weeks ')),
      'CREATE INDEX retain_weeks_id_idx ON retain_weeks (id)'];
    let next = 0;
    await Promise.all(clients.map(async (c) => {
      while (next < statements.length) await c.query(statements[next++]!);
    }));
    await a.query('vacuum analyze retain_weeks');
    // The ledger a drop subtracts the partition's counts from (a copy of dead_letter_rollups' shape).
    await a.query('create table retain_weeks_rollups (like dead_letter_rollups including all)');
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}

/** Detaches, un-counts and drops every finished week older than the retention age. */
export function dropOldWeeks(url: string, retentionMs: number) {
  return async (): Promise<Removal> => {
    const client = new pg.Client({ connectionString: url, application_name: RETENTION_APP });
    await client.connect();
    try {
      const { rows: parts } = await client.query<{ name: string }>(`
        select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
         where i.inhparent = 'retain_weeks_finished'::regclass
           and (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz <= now() - $1::bigint * interval '1 millisecond'
         order by 1`, [retentionMs]);
      const started = performance.now();
      let rows = 0;
      const steps: string[] = [];
      for (const { name } of parts) {
        let t = performance.now();
        await client.query(`alter table retain_weeks_finished detach partition ${name} concurrently`);
        const detachMs = performance.now() - t;
        t = performance.now();
        await client.query('begin');
        const counted = await client.query<{ n: string }>(`
          with counts as (
            insert into retain_weeks_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
            select lazarus_rollup_bucket(created_at), event_type, queue, error_kind, status, -count(*), -sum(attempts)
              from ${name} group by 1, 2, 3, 4, 5 returning -count as n)
          select coalesce(sum(n), 0)::text as n from counts`);
        const rollupMs = performance.now() - t;
        t = performance.now();
        await client.query(`drop table ${name}`);
        await client.query('commit');
        const dropMs = performance.now() - t;
        rows += Number(counted.rows[0]!.n);
        steps.push(`${name}: ${counted.rows[0]!.n} rows; detach concurrently ${detachMs.toFixed(0)} ms, rollup counts ${rollupMs.toFixed(0)} ms, drop + commit ${dropMs.toFixed(0)} ms`);
      }
      return { rows, seconds: since(started), steps };
    } finally {
      await client.end();
    }
  };
}
