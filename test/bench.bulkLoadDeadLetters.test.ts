// The bench's bulk load (triggers off, derived tables rebuilt set-based, indexes built afterwards)
// must leave the same database as inserting the same rows through the triggers: same rows, same
// side tables, same rollups, same indexes, a working change cursor.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bulkLoadDeadLetters, foldAllErrorGroups, insertThroughTriggers, KNOWN_INSERT_TRIGGERS, verifyDerivedTables } from '../bench/bulkLoadDeadLetters.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from './helpers/databases.ts';

const ROWS = 3_000;

// Columns that differ by construction: the change stamp is a fresh sequence value and xid either way.
const ROW_COLUMNS = `id, event_type, queue, source, ordering_key, ordering_seq, dedupe_key, payload, headers, error_kind, error_message,
  error_stack, error_signature, status, attempts, max_attempts, next_attempt_at, lease_owner, lease_token, lease_expires_at,
  resolved_at is not null as resolved, resolved_by, resolution_reason, occurred_at is not null as occurred, created_at, updated_at,
  version, delivery_generation, error_group_id`;
const SNAPSHOTS = {
  deadLetters: `select ${ROW_COLUMNS} from dead_letters_current order by id`,
  errorTexts: 'select * from dead_letter_error_texts order by dead_letter_id',
  actions: 'select dead_letter_id, action, actor, reason, before, after, redrive_id, transform_id, created_at from dead_letter_actions order by dead_letter_id, id',
  rollups: `select bucket, event_type, queue, error_kind, status, sum(count)::bigint as count, sum(attempts)::bigint as attempts
              from dead_letter_rollups group by 1, 2, 3, 4, 5 having sum(count) <> 0 or sum(attempts) <> 0 order by 1, 2, 3, 4, 5`,
  signatureRollups: `select bucket, error_signature, event_type, queue, error_kind, sum(count)::bigint as count
                       from dead_letter_signature_rollups group by 1, 2, 3, 4, 5 having sum(count) <> 0 order by 1, 2, 3, 4, 5`,
  errorGroups: `select id, event_type, error_kind, signature, status, total_count, unresolved_count, first_seen, last_seen, queues, sources,
                       sample_dead_letter_id, regressed_at from error_groups order by id`,
  errorGroupHours: 'select group_id, bucket, count from error_group_hours order by 1, 2',
  errorGroupHistory: 'select group_id, from_status, to_status, actor, reason from error_group_actions order by group_id, id',
  indexes: `select c.relname as table, i.relname as name, pg_get_indexdef(i.oid) as def
              from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class c on c.oid = x.indrelid
             join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' order by 1, 2`,
  triggers: `select tgrelid::regclass::text as table, tgname, tgenabled from pg_trigger where not tgisinternal order by 1, 2`,
};

describe('bench bulk load', () => {
  const adminUrl = inject('adminUrl');
  const names = { triggers: randomDatabaseName('lazarus_t'), bulk: randomDatabaseName('lazarus_t') };
  const urls = { triggers: '', bulk: '' };

  beforeAll(async () => {
    urls.triggers = await createDatabase(adminUrl, names.triggers, inject('templateDatabase'));
    urls.bulk = await createDatabase(adminUrl, names.bulk, inject('templateDatabase'));
    const client = new pg.Client({ connectionString: urls.triggers });
    await client.connect();
    // Several statements, as the bench's trigger path does, so the ledgers hold several rows per group.
    const now = new Date();
    for (let lo = 1; lo <= ROWS; lo += 1_000) await insertThroughTriggers(client, lo, lo + 999, now);
    await foldAllErrorGroups(client); // what the service's folder does a moment later
    await client.end();
    await bulkLoadDeadLetters({ url: urls.bulk, rows: ROWS, now, chunkRows: 700, connections: 2 });
  });
  afterAll(async () => {
    await dropDatabase(adminUrl, names.triggers);
    await dropDatabase(adminUrl, names.bulk);
  });

  async function snapshot(url: string): Promise<Record<string, unknown[]>> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const out: Record<string, unknown[]> = {};
      for (const [name, sql] of Object.entries(SNAPSHOTS)) out[name] = (await client.query(sql)).rows;
      return out;
    } finally {
      await client.end();
    }
  }

  it('leaves every table as inserting the same rows through the triggers does', async () => {
    const [viaTriggers, viaBulk] = await Promise.all([snapshot(urls.triggers), snapshot(urls.bulk)]);
    expect(viaTriggers.deadLetters).toHaveLength(ROWS);
    expect(viaTriggers.errorTexts).toHaveLength(ROWS);
    expect(viaTriggers.actions).toHaveLength(ROWS);
    expect(viaTriggers.rollups!.length).toBeGreaterThan(100);
    expect(viaTriggers.errorGroups!.length).toBeGreaterThan(5);
    for (const name of Object.keys(SNAPSHOTS)) expect({ [name]: viaBulk[name] }).toEqual({ [name]: viaTriggers[name] });
  });

  it('stamps every row with its own change id from the shared sequence and a committed transaction id', async () => {
    const client = new pg.Client({ connectionString: urls.bulk });
    await client.connect();
    try {
      const { rows: [r] } = await client.query(`
        select count(*)::int as n, count(distinct change_id)::int as distinct_ids,
               bool_and(pg_xact_status(change_xid) = 'committed') as committed,
               max(change_id) <= (select last_value from lazarus_change_seq) as from_sequence
          from dead_letter_states`);
      expect(r).toEqual({ n: ROWS, distinct_ids: ROWS, committed: true, from_sequence: true });
    } finally {
      await client.end();
    }
  });

  it('passes its own check, and the check finds a rollup that went missing', async () => {
    await expect(verifyDerivedTables(urls.bulk)).resolves.toMatchObject({ rollupGroupsDiffering: 0, signatureGroupsDiffering: 0, errorGroupsDiffering: 0 });
    const client = new pg.Client({ connectionString: urls.bulk });
    await client.connect();
    try {
      await client.query('delete from dead_letter_rollups where id = (select min(id) from dead_letter_rollups)');
      await expect(verifyDerivedTables(urls.bulk)).rejects.toThrow(/derived tables disagree/);
    } finally {
      await client.end();
    }
  });

  it('refuses to load when dead_letters has an INSERT trigger it does not know', async () => {
    const name = randomDatabaseName('lazarus_t');
    const url = await createDatabase(adminUrl, name, inject('templateDatabase'));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`create function tg_test() returns trigger language plpgsql as $$ begin return null; end $$;
                          create trigger tg_dead_letters__new_ledger after insert on dead_letters for each statement execute function tg_test()`);
      await expect(bulkLoadDeadLetters({ url, rows: 10 })).rejects.toThrow(/unknown: dead_letters.tg_dead_letters__new_ledger/);
      expect((await client.query('select count(*)::int as n from dead_letters')).rows[0].n).toBe(0);
      expect(Object.keys(KNOWN_INSERT_TRIGGERS)).toContain('dead_letters');
    } finally {
      await client.end();
      await dropDatabase(adminUrl, name);
    }
  });
});
