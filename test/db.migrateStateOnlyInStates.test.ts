// Migration 20261203110000_state_only_in_states empties the state columns of dead_letters, which
// held the state each event was recorded with, without rewriting the table, and renames the view
// to dead_letters_current. The current state must come through untouched: no row may take a step
// of the change cursor, a version, a history entry or a rollup delta for it.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../src/db/migrate.ts';
import { useDatabaseBefore } from './helpers/migrations.ts';

const MIGRATION = '20261203110000_state_only_in_states';
const database = useDatabaseBefore(MIGRATION);

const CURRENT = (view: string) => `select id, status::text, attempts, next_attempt_at, lease_owner, resolved_at, resolved_by, version,
                                          change_id::text, change_xid::text, updated_at from ${view} order by id`;
const RECORDED = `select status::text, attempts, next_attempt_at, lease_owner, lease_token, lease_expires_at,
                         resolved_at, resolved_by, resolution_reason from dead_letters order by id`;
const LEDGERS = `select (select count(*) from dead_letter_rollups)::int as rollups, (select count(*) from error_group_deltas)::int as deltas,
                        (select count(*) from dead_letter_actions)::int as actions`;

describe(`migration ${MIGRATION}`, () => {
  it('leaves no stale state on dead_letters, moves no current state, and keeps the table file', async () => {
    const url = await database.create();
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(`insert into dead_letters (event_type, status, attempts, lease_owner, lease_token, lease_expires_at)
                     values ('a', 'PENDING', 0, null, null, null), ('a', 'PROCESSING', 1, 'w1', gen_random_uuid(), now() + interval '30 s')`);
      await c.query(`insert into dead_letters (event_type) select 'b' from generate_series(1, 50)`);
      // The engine's and the operators' writes change only the state row, so the recorded columns go stale.
      await c.query(`update lazarus_dead_letters set status = 'SUCCEEDED', attempts = 9 where event_type = 'b' and id % 2 = 0`);
      await c.query(`update lazarus_dead_letters set status = 'RESOLVED', resolved_by = 'ops' where event_type = 'b' and id % 5 = 0`);
      const stale = await c.query(`select count(*)::int as n from dead_letters d join dead_letter_states s using (id) where d.status <> s.status`);
      expect(stale.rows[0].n).toBeGreaterThan(20);

      const before = (await c.query(CURRENT('lazarus_dead_letters'))).rows;
      const ledgers = (await c.query(LEDGERS)).rows[0];
      const file = (await c.query(`select pg_relation_filenode('dead_letters') as f`)).rows[0].f;

      expect((await migrate(url)).applied[0]).toBe(MIGRATION);

      expect((await c.query(CURRENT('dead_letters_current'))).rows).toEqual(before);
      const recorded = (await c.query(RECORDED)).rows;
      expect(recorded).toHaveLength(52);
      for (const row of recorded) expect(Object.values(row).every((v) => v === null)).toBe(true);
      expect((await c.query(LEDGERS)).rows[0]).toEqual(ledgers);
      // No rewrite: the same file on disk.
      expect((await c.query(`select pg_relation_filenode('dead_letters') as f`)).rows[0].f).toBe(file);
      // The old name stays for one release, for processes of the previous one, and shows the same rows.
      expect((await c.query(CURRENT('lazarus_dead_letters'))).rows).toEqual(before);

      // The old write paths keep working after the upgrade: the engine's lease-fenced state, a view update.
      await c.query(`update dead_letters_current set status = 'PENDING', lease_owner = null, lease_token = null, lease_expires_at = null
                      where status = 'PROCESSING'`);
      expect((await c.query(`select count(*)::int as n from dead_letters_current where status = 'PENDING'`)).rows[0].n)
        .toBe(before.filter((r) => r.status === 'PENDING' || r.status === 'PROCESSING').length);
    } finally {
      await c.end();
    }
  });
});
