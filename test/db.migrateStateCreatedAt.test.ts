// Migration 20261201100000_state_created_at copies each event's created_at onto its state row (and
// indexes (status, created_at, id) for the status pages). Filling the copy is not a change of the
// event: no row may take a step of the change cursor, a version or a history entry for it. And the
// copy must stay equal to dead_letters.created_at on every path that writes either.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../src/db/migrate.ts';
import { useDatabaseBefore } from './helpers/migrations.ts';

const MIGRATION = '20261201100000_state_created_at';
const database = useDatabaseBefore(MIGRATION);

const STATES = `select id, status::text, attempts, version, updated_at, change_id::text, change_xid::text from dead_letter_states order by id`;
const MISMATCHES = `select d.id from dead_letters d join dead_letter_states s using (id) where s.created_at is distinct from d.created_at`;

describe(`migration ${MIGRATION}`, () => {
  it('copies created_at onto every state row without a cursor step, and keeps the copy equal on every write path', async () => {
    const url = await database.create();
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      // Rows in every status, and (after a jump of the sequence) in a later batch of 50,000 ids.
      for (const jump of [false, true]) {
        if (jump) await c.query(`select setval('dead_letters_id_seq', 120000)`);
        await c.query(`
          insert into dead_letters (event_type, status, attempts, next_attempt_at, lease_owner, lease_token, lease_expires_at, created_at)
          values ('a', 'PENDING', 0, now(), null, null, null, now() - interval '3 days'),
                 ('a', 'PROCESSING', 1, now(), 'w1', gen_random_uuid(), now() + interval '30 s', now() - interval '2 days'),
                 ('a', 'SUCCEEDED', 2, null, null, null, null, now() - interval '1 day'),
                 ('a', 'EXHAUSTED', 5, null, null, null, null, now() - interval '5 hours'),
                 ('a', 'RESOLVED', 1, null, null, null, null, now() - interval '1 hour'),
                 ('a', 'DISCARDED', 1, null, null, null, null, now())`);
      }
      // A state row whose event was deleted with triggers off: in no read, and no reason to fail.
      await c.query('begin');
      await c.query('set local session_replication_role = replica');
      const { rows: [orphan] } = await c.query(`delete from dead_letters where status = 'DISCARDED' returning id`);
      await c.query('commit');
      const before = (await c.query(STATES)).rows;
      const history = (await c.query('select count(*)::int as n from dead_letter_actions')).rows[0].n;
      expect(before).toHaveLength(12);

      expect((await migrate(url)).applied[0]).toBe(MIGRATION);

      expect((await c.query(STATES)).rows).toEqual(before);
      expect((await c.query(MISMATCHES)).rows).toEqual([]);
      const { rows: [kept] } = await c.query(`select created_at = updated_at as same from dead_letter_states where id = $1`, [orphan.id]);
      expect(kept.same).toBe(true);
      expect((await c.query('select count(*)::int as n from dead_letter_actions')).rows[0].n).toBe(history);
      const { rows: [column] } = await c.query(`select is_nullable from information_schema.columns
                                                 where table_name = 'dead_letter_states' and column_name = 'created_at'`);
      expect(column.is_nullable).toBe('NO');

      // New rows: a plain SQL insert, an insert through the view with its own created_at, and one
      // taking the default.
      await c.query(`insert into dead_letters (event_type, created_at) values ('b', '2026-01-02T03:04:05.678901Z')`);
      await c.query(`insert into dead_letters_current (event_type, created_at) values ('c', '2025-06-07T08:09:10.111213Z')`);
      await c.query(`insert into dead_letters_current (event_type) values ('d')`);
      // A writer in psql moving created_at, on the table and through the view: the copy follows.
      await c.query(`update dead_letters set created_at = created_at - interval '7 days' where event_type = 'b'`);
      await c.query(`update dead_letters_current set created_at = '2024-01-01T00:00:00Z' where event_type = 'c'`);
      expect((await c.query(MISMATCHES)).rows).toEqual([]);
      const { rows: moved } = await c.query(`select s.created_at from dead_letter_states s join dead_letters d using (id) where d.event_type = 'c'`);
      expect(moved[0].created_at.toISOString()).toBe('2024-01-01T00:00:00.000Z');
    } finally {
      await c.end();
    }
  });
});
