import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

async function groups(): Promise<GroupRow[]> {
  return (await sql.query<GroupRow>('select * from error_groups order by id')).rows;
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
    const { rows: hours } = await sql.query<{ group_id: string; count: string }>('select group_id::text, count::text from error_group_hours order by group_id');
    expect(hours.map((h) => [h.group_id, h.count])).toEqual([[rows[0]!.id, '3'], [rows[1]!.id, '1']]);
  });

  it('resolves a group by itself when no member is unresolved, and records why', async () => {
    const a = await insert({});
    const b = await insert({});
    await sql.query(`update dead_letters set status = 'RESOLVED' where id = $1`, [a]);
    expect((await groups())[0]).toMatchObject({ status: 'OPEN', unresolved_count: '1' });
    await sql.query(`update dead_letters set status = 'SUCCEEDED' where id = $1`, [b]);

    const [group] = await groups();
    expect(group).toMatchObject({ status: 'RESOLVED', unresolved_count: '0', total_count: '2', regressed_at: null });
    expect(await history(group!.id)).toEqual([[null, 'OPEN', 'system', 'first seen'], ['OPEN', 'RESOLVED', 'system', 'no unresolved members']]);
  });

  it('leaves a group alone when the retry loop claims and releases its members', async () => {
    const a = await insert({});
    await sql.query(`update dead_letters set status = 'PROCESSING', lease_owner = 'w', lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute' where id = $1`, [a]);
    await sql.query(`update dead_letters set status = 'PENDING', lease_owner = null, lease_token = null, lease_expires_at = null, attempts = 1 where id = $1`, [a]);
    const [group] = await groups();
    expect(group).toMatchObject({ status: 'OPEN', unresolved_count: '1', total_count: '1' });
    expect(await history(group!.id)).toHaveLength(1);
  });

  it('reopens a RESOLVED group as regressed when a new failure arrives', async () => {
    const a = await insert({});
    await sql.query(`update dead_letters set status = 'RESOLVED' where id = $1`, [a]);
    await insert({ message: 'HTTP 503 from inventory (request 99)' });

    const [group] = await groups();
    expect(group).toMatchObject({ status: 'OPEN', unresolved_count: '1', total_count: '2' });
    expect(group!.regressed_at).toBeInstanceOf(Date);
    expect((await history(group!.id)).at(-1)).toEqual(['RESOLVED', 'OPEN', 'system', 'regressed: a new failure']);
  });

  it('reopens a RESOLVED group without calling it a regression when a member is requeued', async () => {
    const a = await insert({ status: 'EXHAUSTED' });
    await sql.query(`update dead_letters set status = 'RESOLVED' where id = $1`, [a]);
    await sql.query(`update dead_letters set status = 'PENDING' where id = $1`, [a]);
    const [group] = await groups();
    expect(group).toMatchObject({ status: 'OPEN', unresolved_count: '1', regressed_at: null });
    expect((await history(group!.id)).at(-1)).toEqual(['RESOLVED', 'OPEN', 'system', 'a member is unresolved again']);
  });

  it('keeps an IGNORED group IGNORED while it keeps counting', async () => {
    const a = await insert({});
    const [created] = await groups();
    await sql.query(`update error_groups set status = 'IGNORED' where id = $1`, [created!.id]);
    await sql.query(`update dead_letters set status = 'DISCARDED' where id = $1`, [a]);
    await insert({});
    await insert({});

    const [group] = await groups();
    expect(group).toMatchObject({ status: 'IGNORED', total_count: '3', unresolved_count: '2', regressed_at: null });
    expect(await history(group!.id)).toEqual([[null, 'OPEN', 'system', 'first seen']]);
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
    await sql.query(`update dead_letters set fingerprint = 'inventory-down' where id = $1`, [a]);
    const rows = await groups();
    expect(rows.map((g) => [g.signature, g.total_count, g.unresolved_count, g.status])).toEqual([
      ['socket hang up', '0', '0', 'RESOLVED'],
      ['inventory-down', '1', '1', 'OPEN'],
    ]);
  });

  it('lets concurrent single-row writers to one group count every row', async () => {
    await Promise.all(Array.from({ length: 40 }, (_, i) => insert({ message: `HTTP 503 from inventory (request ${i})` })));
    const [group] = await groups();
    expect(group).toMatchObject({ total_count: '40', unresolved_count: '40' });
  });
});
