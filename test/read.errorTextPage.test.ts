import { describe, expect, it } from 'vitest';
import { readErrorTextPage } from '../src/db/sql/errorTextPage.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';

const t = useTestDatabase();
// A small window and cap, so a handful of rows puts each text in a different regime.
const SEARCH = { window: 5, cap: 3 };
const newestFirst = { field: 'CREATED_AT' as const, descending: true, after: null };

// Rows created one minute apart, oldest first, each with its message; returns their ids.
async function seed(messages: string[]): Promise<bigint[]> {
  const start = Date.now() - messages.length * 60_000;
  const ids = [];
  for (const [i, errorMessage] of messages.entries()) {
    const row = await insertDeadLetter(t.db, { errorMessage, eventType: i % 2 ? 'odd' : 'even', createdAt: new Date(start + i * 60_000) });
    ids.push(row.id);
  }
  return ids;
}

describe('a page filtered by error text', () => {
  it('gives the same rows whether the text fills the window, is rare, or is common but sparse where the page starts', async () => {
    // Oldest to newest: 6 "needle", 2 "rare one", 8 "hay".
    const ids = await seed([...Array(6).fill('needle in a stack'), 'a rare one', 'another rare one', ...Array(8).fill('hay bale')]);
    const page = async (errorText: string, limit: number, extra: { eventTypes?: string[] } = {}, after: { key: string; id: bigint } | null = null) =>
      (await readErrorTextPage(t.db, { errorText, ...extra }, { ...newestFirst, after, limit }, SEARCH)).map((r) => r.id);

    // "hay" fills a page of 4 within the 5 newest rows.
    expect(await page('HAY', 4)).toEqual(ids.slice(12, 16).reverse());
    // "rare one" has 2 matches, below the cap of 3: read from its ids, other filters still apply.
    expect(await page('rare one', 4)).toEqual([ids[7], ids[6]]);
    expect(await page('rare one', 4, { eventTypes: ['even'] })).toEqual([ids[6]]);
    // "needle" has 6 matches (past the cap) but none in the 5 newest rows: the unbounded walk.
    const first = await readErrorTextPage(t.db, { errorText: 'needle' }, { ...newestFirst, limit: 4 }, SEARCH);
    expect(first.map((r) => r.id)).toEqual(ids.slice(2, 6).reverse());
    const last = first.at(-1)!;
    expect(await page('needle', 4, {}, { key: last.sortKey, id: last.id })).toEqual([ids[1], ids[0]]);
    // Nothing matches: an empty page, not an error.
    expect(await page('no such text', 4)).toEqual([]);
  });

  it('reads a state filter from the state row, not the status the event was recorded with', async () => {
    const ids = await seed(['a rare one', 'another rare one', 'hay bale', 'hay bale', 'hay bale', 'hay bale']);
    await t.handle.pool.query(`update dead_letter_states set status = 'EXHAUSTED' where id = $1`, [ids[0]]);
    const page = async (filter: { statuses?: ('PENDING' | 'EXHAUSTED')[]; eventTypes?: string[] }) =>
      (await readErrorTextPage(t.db, { errorText: 'rare one', ...filter }, { ...newestFirst, limit: 4 }, SEARCH)).map((r) => [r.id, r.status]);
    expect(await page({ statuses: ['EXHAUSTED'] })).toEqual([[ids[0], 'EXHAUSTED']]);
    expect(await page({ statuses: ['PENDING'] })).toEqual([[ids[1], 'PENDING']]);
    expect(await page({ eventTypes: ['even'] })).toEqual([[ids[0], 'EXHAUSTED']]);
  });

  it('gives the same rows when the cap grows with the table', async () => {
    const ids = await seed([...Array(6).fill('needle in a stack'), ...Array(10).fill('hay bale')]);
    await t.handle.pool.query('analyze dead_letters');
    // sqrt(4 × 16 rows) = 8: the 6 "needle" matches are collected, where the fixed cap of 3 walked.
    const scaled = { ...SEARCH, isCapScaled: true };
    const first = await readErrorTextPage(t.db, { errorText: 'needle' }, { ...newestFirst, limit: 4 }, scaled);
    expect(first.map((r) => r.id)).toEqual(ids.slice(2, 6).reverse());
    const last = first.at(-1)!;
    const next = await readErrorTextPage(t.db, { errorText: 'needle' }, { ...newestFirst, limit: 4, after: { key: last.sortKey, id: last.id } }, scaled);
    expect(next.map((r) => r.id)).toEqual([ids[1], ids[0]]);
  });
});

describe('the matches of an error text (lazarus_error_text_matches)', () => {
  it('come from the trigram indexes where PostgreSQL would scan the side table', async () => {
    await t.handle.pool.query(`
      insert into dead_letters (event_type, error_message, error_stack)
      select 'e', case when g % 500 = 0 then 'checksum mismatch in batch ' || g else 'HTTP 503 from inventory ' || g end,
             (select string_agg('    at frame' || i || ' (/app/h' || g || '.ts:' || i || ')', chr(10)) from generate_series(1, 20) i)
        from generate_series(1, 5000) g`);
    await t.handle.pool.query('analyze dead_letter_error_texts');
    const client = await t.handle.pool.connect();
    try {
      await client.query('begin');
      // Scans of the side table, and of its message index, by the query `run` makes. The counts
      // include this connection's earlier transactions until it reports them (never inside a
      // transaction), so only the difference says what the query did.
      const count = async () => (await client.query<{ table: number; index: number }>(`
        select pg_stat_get_xact_numscans('dead_letter_error_texts'::regclass)::int as table,
               pg_stat_get_xact_numscans('dead_letter_error_texts_message_trgm'::regclass)::int as index`)).rows[0]!;
      const scansBy = async (sql: string) => {
        const before = await count();
        const { rows } = await client.query<{ id: string }>(sql);
        const after = await count();
        return { ids: rows.map((r) => r.id), scans: { table: after.table - before.table, index: after.index - before.index } };
      };
      // The same query as plain SQL: at this size PostgreSQL reads every row of the side table.
      const plain = await scansBy(`select t.dead_letter_id::text as id from dead_letter_error_texts t
        where t.error_message ilike '%checksum mismatch%' or t.error_stack ilike '%checksum mismatch%' order by 1 limit 2000`);
      expect(plain.ids).toHaveLength(10);
      expect(plain.scans).toEqual({ table: 1, index: 0 });
      const matches = await scansBy(`select m::text as id from lazarus_error_text_matches('%checksum mismatch%', 2000) m order by 1`);
      expect(matches.ids).toEqual(plain.ids);
      expect(matches.scans).toEqual({ table: 0, index: 1 });
      // The cap holds.
      expect((await client.query(`select * from lazarus_error_text_matches('%inventory%', 7)`)).rowCount).toBe(7);
    } finally {
      await client.query('rollback');
      client.release();
    }
  });

  it('run without parallel workers, even where PostgreSQL is told to plan them', async () => {
    await t.handle.pool.query(`
      insert into dead_letters (event_type, error_message)
      select 'e', case when g % 500 = 0 then 'checksum mismatch in batch ' || g else 'HTTP 503 from inventory ' || g end
        from generate_series(1, 5000) g`);
    await t.handle.pool.query('analyze dead_letter_error_texts');
    const client = await t.handle.pool.connect();
    const plans: string[] = [];
    const onNotice = (notice: { message?: string }) => plans.push(notice.message ?? '');
    client.on('notice', onNotice);
    try {
      await client.query('begin');
      // A Gather over every parallel-safe plan (renamed in PostgreSQL 16), and every plan, the
      // function's own query included, sent back as a NOTICE.
      const version = (await client.query<{ v: number }>(`select current_setting('server_version_num')::int as v`)).rows[0]!.v;
      await client.query(`load 'auto_explain'`);
      await client.query(`set local ${version >= 160000 ? 'debug_parallel_query' : 'force_parallel_mode'} = on;
        set local max_parallel_workers_per_gather = 2; set local auto_explain.log_min_duration = 0;
        set local auto_explain.log_nested_statements = on; set local auto_explain.log_level = notice`);
      // As plain SQL, the function's query gets one (as the function's own did before).
      await client.query(`select t.dead_letter_id from dead_letter_error_texts t where t.error_message ilike $1 or t.error_stack ilike $1`, ['%checksum mismatch%']);
      // auto_explain sends a plan when its portal closes: in a transaction, a parameterised
      // statement's portal closes when the next statement starts.
      await client.query('select 1');
      expect(plans.join('\n')).toMatch(/Gather/);
      plans.length = 0;
      // random() (parallel restricted) keeps the calling statement itself out of a worker.
      const { rowCount } = await client.query(`select * from lazarus_error_text_matches('%checksum mismatch%', 2000) where random() >= 0`);
      expect(rowCount).toBe(10);
      const inner = plans.filter((plan) => plan.includes('dead_letter_error_texts'));
      expect(inner).toHaveLength(1);
      expect(inner[0]).not.toMatch(/Gather|Parallel/);
    } finally {
      client.off('notice', onNotice);
      await client.query('rollback');
      client.release();
    }
  });
});
