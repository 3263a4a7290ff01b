import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_GROUP_FOLD_LOCK, foldErrorGroups } from '../src/db/sql/foldErrorGroups.ts';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();
let sql: pg.Pool;

beforeAll(() => {
  sql = testPool(t.url, { max: 4 });
});
afterAll(async () => {
  await sql.end();
});

interface GroupRow {
  id: string;
  event_type: string;
  error_kind: string;
  signature: string;
  status: string;
  total_count: string;
  unresolved_count: string;
  queues: string[];
  sources: string[];
  regressed_at: Date | null;
}

/** The groups once the ledger is folded (the service folds within a fraction of a second), in order of first event. */
async function groups(): Promise<GroupRow[]> {
  await foldErrorGroupLedger(t.db);
  return (await sql.query<GroupRow>('select * from error_groups order by sample_dead_letter_id nulls last, id')).rows;
}

async function history(groupId: string) {
  const { rows } = await sql.query<{ from_status: string | null; to_status: string; actor: string; reason: string }>(
    'select from_status, to_status, actor, reason from error_group_actions where group_id = $1 order by id',
    [groupId],
  );
  return rows.map((r) => [r.from_status, r.to_status, r.actor, r.reason]);
}

async function insert(values: { eventType?: string; kind?: string; message?: string; fingerprint?: string | null; status?: string; queue?: string; source?: string }) {
  const { rows } = await sql.query<{ id: string }>(
    `insert into dead_letters (event_type, error_kind, error_message, fingerprint, status, queue, source)
     values ($1, $2::"ErrorKind", $3, $4, $5::"DeadLetterStatus", $6, $7) returning id::text`,
    [values.eventType ?? 'order.placed', values.kind ?? 'DOWNSTREAM_API', values.message ?? 'HTTP 503 from inventory (request 1)',
      values.fingerprint ?? null, values.status ?? 'PENDING', values.queue ?? 'default', values.source ?? 'unknown'],
  );
  return rows[0]!.id;
}

describe('error groups kept by the database', () => {
  it('groups events by event type, error kind and signature', async () => {
    await insert({ message: 'HTTP 503 from inventory (request 1)' });
    await insert({ message: 'HTTP 503 from inventory (request 2)', queue: 'q2', source: 'billing' });
    await insert({ message: 'HTTP 503 from inventory (request 3)', kind: 'TIMEOUT' });
    await insert({ message: 'HTTP 503 from inventory (request 4)', eventType: 'order.cancelled' });
    await insert({ message: 'customer 42 not found' });

    const rows = await groups();
    expect(rows.map((g) => [g.event_type, g.error_kind, g.signature, g.total_count, g.unresolved_count, g.status])).toEqual([
      ['order.placed', 'DOWNSTREAM_API', 'HTTP <n> from inventory (request <n>)', '2', '2', 'OPEN'],
      ['order.placed', 'TIMEOUT', 'HTTP <n> from inventory (request <n>)', '1', '1', 'OPEN'],
      ['order.cancelled', 'DOWNSTREAM_API', 'HTTP <n> from inventory (request <n>)', '1', '1', 'OPEN'],
      ['order.placed', 'DOWNSTREAM_API', 'customer <n> not found', '1', '1', 'OPEN'],
    ]);
    expect(rows[0]!.queues).toEqual(['default', 'q2']);
    expect(rows[0]!.sources).toEqual(['billing', 'unknown']);
    expect(await history(rows[0]!.id)).toEqual([[null, 'OPEN', 'system', 'first seen']]);
  });

  it('groups by the producer’s fingerprint over the computed signature when one is set', async () => {
    await insert({ message: 'connection reset by 10.0.0.1', fingerprint: 'inventory-down' });
    await insert({ message: 'socket hang up', fingerprint: 'inventory-down' });
    await insert({ message: 'socket hang up' });

    const rows = await groups();
    expect(rows.map((g) => [g.signature, g.total_count])).toEqual([['inventory-down', '2'], ['socket hang up', '1']]);
  });

  it('counts a bulk SQL insert of 1,000 rows into each group once, with hourly counts', async () => {
    await sql.query(`
      insert into dead_letters (event_type, error_kind, error_message, status, queue, created_at)
      select 'bulk.' || (i % 3), 'VALIDATION', 'field ' || (i % 2) || ' missing in row ' || i,
             case when i % 10 = 0 then 'DISCARDED' else 'EXHAUSTED' end::"DeadLetterStatus", 'q' || (i % 5),
             now() - (i % 2) * interval '1 hour'
        from generate_series(1, 1000) i`);

    const rows = await groups();
    expect(rows).toHaveLength(3); // 'field <n> missing in row <n>' for each of three event types
    expect(rows.map((g) => [g.event_type, Number(g.total_count)]).sort()).toEqual([['bulk.0', 333], ['bulk.1', 334], ['bulk.2', 333]]);
    const unresolved = rows.reduce((n, g) => n + Number(g.unresolved_count), 0);
    expect(unresolved).toBe(900);
    expect(rows.every((g) => g.queues.length === 5)).toBe(true);
    const { rows: hours } = await sql.query<{ n: string; buckets: string }>('select sum(count)::text as n, count(distinct bucket)::text as buckets from error_group_hours');
    expect(hours[0]).toEqual({ n: '1000', buckets: '2' });
    const { rows: actions } = await sql.query<{ n: string }>('select count(*)::text as n from error_group_actions');
    expect(actions[0]!.n).toBe('3');
  });

  it('counts one statement into groups that exist and groups it creates alike', async () => {
    await insert({ message: 'alpha 1' });
    await sql.query(`insert into dead_letters (event_type, error_kind, error_message)
                     values ('order.placed', 'DOWNSTREAM_API', 'alpha 2'), ('order.placed', 'DOWNSTREAM_API', 'beta 1'),
                            ('order.placed', 'DOWNSTREAM_API', 'alpha 3')`);
    const rows = await groups();
    expect(rows.map((g) => [g.signature, g.total_count, g.unresolved_count])).toEqual([['alpha <n>', '3', '3'], ['beta <n>', '1', '1']]);
    expect(await history(rows[0]!.id)).toEqual([[null, 'OPEN', 'system', 'first seen']]);
    expect(await history(rows[1]!.id)).toEqual([[null, 'OPEN', 'system', 'first seen']]);
    const { rows: hours } = await sql.query<{ group_id: string; count: string }>('select group_id::text, count::text from error_group_hours');
    expect(new Map(hours.map((h) => [h.group_id, h.count]))).toEqual(new Map([[rows[0]!.id, '3'], [rows[1]!.id, '1']]));
  });

  it('resolves a group by itself when no member is unresolved, and records why', async () => {
    const a = await insert({});
    const b = await insert({});
    await sql.query(`update dead_letters_current set status = 'RESOLVED' where id = $1`, [a]);
    expect((await groups())[0]).toMatchObject({ status: 'OPEN', unresolved_count: '1' });
    await sql.query(`update dead_letters_current set status = 'SUCCEEDED' where id = $1`, [b]);

    const [group] = await groups();
    expect(group).toMatchObject({ status: 'RESOLVED', unresolved_count: '0', total_count: '2', regressed_at: null });
    expect(await history(group!.id)).toEqual([[null, 'OPEN', 'system', 'first seen'], ['OPEN', 'RESOLVED', 'system', 'no unresolved members']]);
  });

  it('leaves a group alone when the retry loop claims and releases its members', async () => {
    const a = await insert({});
    await sql.query(`update dead_letters_current set status = 'PROCESSING', lease_owner = 'w', lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute' where id = $1`, [a]);
    await sql.query(`update dead_letters_current set status = 'PENDING', lease_owner = null, lease_token = null, lease_expires_at = null, attempts = 1 where id = $1`, [a]);
    const [group] = await groups();
    expect(group).toMatchObject({ status: 'OPEN', unresolved_count: '1', total_count: '1' });
    expect(await history(group!.id)).toHaveLength(1);
  });

  it('reopens a RESOLVED group as regressed when a new failure arrives', async () => {
    const a = await insert({});
    await groups();
    await sql.query(`update dead_letters_current set status = 'RESOLVED' where id = $1`, [a]);
    expect((await groups())[0]).toMatchObject({ status: 'RESOLVED' });
    await insert({ message: 'HTTP 503 from inventory (request 99)' });

    const [group] = await groups();
    expect(group).toMatchObject({ status: 'OPEN', unresolved_count: '1', total_count: '2' });
    expect(group!.regressed_at).toBeInstanceOf(Date);
    expect((await history(group!.id)).at(-1)).toEqual(['RESOLVED', 'OPEN', 'system', 'regressed: a new failure']);
  });

  it('reopens a RESOLVED group without calling it a regression when a member is requeued', async () => {
    const a = await insert({ status: 'EXHAUSTED' });
    await groups();
    await sql.query(`update dead_letters_current set status = 'RESOLVED' where id = $1`, [a]);
    expect((await groups())[0]).toMatchObject({ status: 'RESOLVED' });
    await sql.query(`update dead_letters_current set status = 'PENDING' where id = $1`, [a]);
    const [group] = await groups();
    expect(group).toMatchObject({ status: 'OPEN', unresolved_count: '1', regressed_at: null });
    expect((await history(group!.id)).at(-1)).toEqual(['RESOLVED', 'OPEN', 'system', 'a member is unresolved again']);
  });

  it('keeps an IGNORED group IGNORED while it keeps counting', async () => {
    const a = await insert({});
    const [created] = await groups();
    await sql.query(`update error_groups set status = 'IGNORED' where id = $1`, [created!.id]);
    await sql.query(`update dead_letters_current set status = 'DISCARDED' where id = $1`, [a]);
    await insert({});
    await insert({});

    const [group] = await groups();
    expect(group).toMatchObject({ status: 'IGNORED', total_count: '3', unresolved_count: '2', regressed_at: null });
    expect(await history(group!.id)).toEqual([[null, 'OPEN', 'system', 'first seen']]);
  });

  it('raises NEW_GROUP and REGRESSION alerts from the fold, once per group, and none for an IGNORED group', async () => {
    await sql.query(`insert into alert_rules (name, "trigger", target_url, signing_secret) values
      ('new', 'NEW_GROUP', 'https://alerts.example.com/a', 'whsec_0123456789abcdef'),
      ('back', 'REGRESSION', 'https://alerts.example.com/b', 'whsec_0123456789abcdef')`);
    const alerts = async () => (await sql.query<{ trigger: string; subject: string }>(`select "trigger"::text, subject from alerts order by id`)).rows;
    await insert({});
    await insert({ message: 'HTTP 503 from inventory (request 2)' });
    await insert({ eventType: 'quiet.type', status: 'SUCCEEDED' }); // a group that starts RESOLVED: nothing failed
    const [group, resolvedFromStart] = await groups();
    expect(resolvedFromStart).toMatchObject({ status: 'RESOLVED' });
    expect(await alerts()).toEqual([{ trigger: 'NEW_GROUP', subject: `group:${group!.id}` }]);

    await sql.query(`update dead_letters_current set status = 'RESOLVED' where status = 'PENDING'`);
    await groups();
    await insert({ message: 'HTTP 503 from inventory (request 3)' });
    await groups();
    expect(await alerts()).toEqual([{ trigger: 'NEW_GROUP', subject: `group:${group!.id}` }, { trigger: 'REGRESSION', subject: `group:${group!.id}` }]);

    // IGNORED keeps counting and raises nothing.
    await sql.query(`update error_groups set status = 'IGNORED' where id = $1`, [group!.id]);
    await insert({ message: 'HTTP 503 from inventory (request 4)' });
    await groups();
    expect((await alerts()).length).toBe(2);
  });

  it('starts a group whose first events are all final as RESOLVED', async () => {
    await insert({ status: 'SUCCEEDED' });
    const [group] = await groups();
    expect(group).toMatchObject({ status: 'RESOLVED', unresolved_count: '0', total_count: '1' });
    expect(await history(group!.id)).toEqual([[null, 'RESOLVED', 'system', 'first seen']]);
  });

  it('takes deleted unresolved members out of the unresolved count, resolving the group at 0', async () => {
    const a = await insert({});
    await sql.query('delete from dead_letters where id = $1', [a]);
    const [group] = await groups();
    expect(group).toMatchObject({ status: 'RESOLVED', unresolved_count: '0', total_count: '1' });
  });

  it('moves a row’s counts when an UPDATE changes its group', async () => {
    const a = await insert({ message: 'socket hang up' });
    await sql.query(`update dead_letters_current set fingerprint = 'inventory-down' where id = $1`, [a]);
    const rows = await groups();
    expect(rows.map((g) => [g.signature, g.total_count, g.unresolved_count, g.status])).toEqual([
      ['socket hang up', '0', '0', 'RESOLVED'],
      ['inventory-down', '1', '1', 'OPEN'],
    ]);
  });

  it('leaves a RESOLVED group RESOLVED when a failure arrives and is resolved within one fold', async () => {
    const a = await insert({});
    await sql.query(`update dead_letters_current set status = 'RESOLVED' where id = $1`, [a]);
    await groups();
    const b = await insert({});
    await sql.query(`update dead_letters_current set status = 'SUCCEEDED' where id = $1`, [b]);
    const [group] = await groups();
    expect(group).toMatchObject({ status: 'RESOLVED', total_count: '2', unresolved_count: '0', regressed_at: null });
  });

  it('folds a ledger longer than one batch in several short batches, with the same result', async () => {
    await sql.query(`insert into dead_letters (event_type, error_kind, error_message) select 'many.' || i, 'UNKNOWN', 'x' from generate_series(1, 25) i`);
    for (let i = 0; i < 30; i += 1) await insert({ eventType: `many.${i % 5}`, kind: 'UNKNOWN', message: 'x' });
    const batches: number[] = [];
    const result = await foldErrorGroupLedger(t.db, { batchRows: 10, onBatch: (b) => batches.push(b.taken) });
    expect(result).toMatchObject({ folded: 55, busy: false });
    expect(batches).toEqual([10, 10, 10, 10, 10, 5]);
    const { rows } = await sql.query<{ n: string; total: string }>('select count(*)::text as n, sum(total_count)::text as total from error_groups');
    expect(rows[0]).toEqual({ n: '26', total: '55' }); // many.0 … many.25
  });

  it('lets concurrent single-row writers to one group count every row', async () => {
    await Promise.all(Array.from({ length: 40 }, (_, i) => insert({ message: `HTTP 503 from inventory (request ${i})` })));
    const [group] = await groups();
    expect(group).toMatchObject({ total_count: '40', unresolved_count: '40' });
  });
});

describe('no producer waits on another', () => {
  const INSERT = `insert into dead_letters (event_type, error_kind, error_message) values ('order.placed', 'DOWNSTREAM_API', $1)`;

  it('commits a second producer’s insert into a group while the first producer’s transaction is still open', async () => {
    const first = await sql.connect();
    const second = await sql.connect();
    try {
      await first.query('begin');
      await first.query(INSERT, ['HTTP 503 from inventory (request 1)']);
      await second.query('begin');
      // A wait on the first transaction's locks would surface here as an error, not as a hang.
      await second.query(`set local lock_timeout = '5s'`);
      await second.query(INSERT, ['HTTP 503 from inventory (request 2)']);
      await second.query('update dead_letters_current set status = $1 where error_message = $2', ['RESOLVED', 'HTTP 503 from inventory (request 2)']);
      await second.query('commit');

      // The folder and an operator move do not wait on the open producer either.
      const [group] = await groups();
      expect(group).toMatchObject({ total_count: '1', unresolved_count: '0', status: 'RESOLVED' });
      await second.query('begin');
      await second.query(`set local lock_timeout = '5s'`);
      await second.query(`update error_groups set note = 'seen' where id = $1`, [group!.id]);
      await second.query('commit');

      await first.query('commit');
      const [after] = await groups();
      expect(after).toMatchObject({ total_count: '2', unresolved_count: '1', status: 'OPEN', note: 'seen' });
      expect(after!.regressed_at).toBeInstanceOf(Date);
    } finally {
      first.release();
      second.release();
    }
  });

  it('steps aside while someone holds ERROR_GROUP_FOLD_LOCK, the lock the fold itself takes', async () => {
    await insert({});
    const holder = await sql.connect();
    try {
      await holder.query('begin');
      await holder.query(`select pg_advisory_xact_lock(${ERROR_GROUP_FOLD_LOCK})`);
      expect(await foldErrorGroups(t.db, 100)).toEqual({ taken: -1, changed: 0 });
    } finally {
      await holder.query('rollback');
      holder.release();
    }
    expect(await foldErrorGroups(t.db, 100)).toMatchObject({ taken: 1 });
  });

  it('lets two folders run at once: one folds, the other steps aside, and every delta counts once', async () => {
    await sql.query(`insert into dead_letters (event_type, error_kind, error_message) select 'order.placed', 'DOWNSTREAM_API', 'boom ' || i from generate_series(1, 300) i`);
    for (let i = 0; i < 20; i += 1) await sql.query(INSERT, [`boom ${i}`]);
    const results = await Promise.all([foldErrorGroupLedger(t.db, { batchRows: 3 }), foldErrorGroupLedger(t.db, { batchRows: 3 })]);
    const rest = await foldErrorGroupLedger(t.db);
    expect(results.reduce((n, r) => n + r.folded, 0) + rest.folded).toBe(21);
    const [group] = await groups();
    expect(group).toMatchObject({ total_count: '320', unresolved_count: '320' });
  });
});
