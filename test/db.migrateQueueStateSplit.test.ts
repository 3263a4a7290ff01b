// The queue-state split (migration 20261126130000_narrow_queue_state) applied to a database that
// holds events in every status, with history, attempts, tombstones and a live cursor: every row,
// every history entry and every cursor position must come through intact.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../src/db/migrate.ts';
import { useDatabaseBefore } from './helpers/migrations.ts';
import { ledgersAndScans } from './helpers/rollups.ts';

const SPLIT = '20261126130000_narrow_queue_state';
const database = useDatabaseBefore(SPLIT);

// The event as one row, before (one table) and after (the view over both tables).
const EVENT = `id, event_type, queue, source, ordering_key, ordering_seq, dedupe_key, payload, headers, error_kind::text,
  error_message, error_stack, status::text, attempts, max_attempts, next_attempt_at, lease_owner, lease_token::text,
  lease_expires_at, resolved_at, resolved_by, resolution_reason, occurred_at, created_at, updated_at, version,
  change_id::text, change_xid::text, error_signature, delivery_generation, fingerprint, error_group_id::text`;
const HISTORY = {
  actions: 'select * from dead_letter_actions order by id',
  attempts: 'select id, dead_letter_id, attempt_number, outcome::text, change_id::text, change_xid::text from delivery_attempts order by id',
  tombstones: 'select id, status::text, attempts, updated_at, change_id::text, change_xid::text from dead_letter_tombstones order by change_id',
  groups: 'select id, total_count, unresolved_count, status::text from error_groups order by id',
};

async function seedEveryStatus(c: pg.Client): Promise<void> {
  // Ids 1-6 and, after a jump of the sequence, 120001-120006: the copy runs in batches of 50,000
  // ids, so these rows fall in the first and the third batch, with an empty one between.
  for (const jump of [false, true]) {
    if (jump) await c.query(`select setval('dead_letters_id_seq', 120000)`);
    await c.query(`
      insert into dead_letters (event_type, queue, payload, error_kind, error_message, status, attempts, max_attempts,
                                next_attempt_at, lease_owner, lease_token, lease_expires_at, resolved_by, resolution_reason,
                                ordering_key, ordering_seq, dedupe_key, fingerprint)
      values ('order.placed', 'orders', '{"n": 1}', 'TIMEOUT', 'timed out after 30 s', 'PENDING', 0, null, now(), null, null, null, null, null, 'k1', 1, null, null),
             ('order.placed', 'orders', '{"n": 2}', 'DOWNSTREAM_API', 'HTTP 503', 'PROCESSING', 1, 5, now(), 'w1', gen_random_uuid(), now() + interval '30 s', null, null, 'k1', 2, 'd-' || ${Number(jump)}, null),
             ('invoice.sent', 'billing', '{"n": 3}', 'DOWNSTREAM_API', 'HTTP 503', 'SUCCEEDED', 2, null, null, null, null, null, null, null, null, null, null, 'fp-1'),
             ('invoice.sent', 'billing', '{"n": 4}', 'VALIDATION', 'bad amount 12', 'EXHAUSTED', 8, 8, null, null, null, null, null, null, null, null, null, null),
             ('user.signup', 'default', '{"n": 5}', 'CRASH', 'segfault', 'RESOLVED', 3, null, null, null, null, null, 'ops', 'fixed by hand', null, null, null, null),
             ('user.signup', 'default', '{"n": 6}', 'UNKNOWN', 'gone', 'DISCARDED', 1, null, null, null, null, null, 'ops', 'test event', null, null, null, null)`);
  }
  // Changes after insert, so versions, updated_at and the delivery generation are not the defaults.
  await c.query(`update dead_letters set status = 'PENDING', next_attempt_at = now() + interval '1 hour' where id = 120003`);
  await c.query(`update dead_letters set attempts = attempts + 1 where id in (1, 120001)`);
  await c.query(`update dead_letters set payload = '{"n": 1, "edited": true}' where id = 1`);
  await c.query(`insert into dead_letter_actions (dead_letter_id, action, actor, reason, before, after)
                 values (5, 'RESOLVED', 'ops', 'fixed by hand', '{"status": "EXHAUSTED"}', '{"status": "RESOLVED"}')`);
  await c.query(`insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, duration_ms, outcome)
                 values (2, 1, 'w1', 12, 'FAILED'), (3, 1, 'w1', 9, 'SUCCEEDED'), (120004, 8, 'w2', 30000, 'TIMED_OUT')`);
  // A deleted event leaves a tombstone; the folder brings the error groups up to date.
  await c.query(`insert into dead_letters (event_type, status, next_attempt_at) values ('gone.soon', 'EXHAUSTED', null)`);
  await c.query(`delete from dead_letters where event_type = 'gone.soon'`);
  await c.query('select lazarus_fold_error_groups(1000000)');
}

async function snapshot(c: pg.Client, events: string) {
  const out: Record<string, unknown[]> = { events: (await c.query(`select ${EVENT} from ${events} order by id`)).rows };
  for (const [key, sql] of Object.entries(HISTORY)) out[key] = (await c.query(sql)).rows;
  return out;
}

/** The highest change cursor over events, attempts and tombstones: where a caught-up subscriber stands. */
const CURSOR = (events: string) => `
  select x.change_xid::text as xid, x.change_id::text as change_id from (
    select change_xid, change_id from ${events}
    union all select change_xid, change_id from delivery_attempts
    union all select change_xid, change_id from dead_letter_tombstones) x
   order by x.change_xid desc, x.change_id desc limit 1`;

describe(`migration ${SPLIT}`, () => {
  it('keeps every row in every status, every history entry and every cursor position', async () => {
    const url = await database.create();

    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await seedEveryStatus(c);
      const before = await snapshot(c, 'dead_letters');
      const cursorBefore = (await c.query(CURSOR('dead_letters'))).rows[0] as { xid: string; change_id: string };
      expect(new Set((before.events as { status: string }[]).map((e) => e.status))).toEqual(
        new Set(['PENDING', 'PROCESSING', 'SUCCEEDED', 'EXHAUSTED', 'RESOLVED', 'DISCARDED']));
      expect((before.events as { delivery_generation: number }[]).some((e) => e.delivery_generation > 0)).toBe(true);

      // The split first, then whatever migrations came after it: the upgrade a user runs.
      expect((await migrate(url)).applied[0]).toBe(SPLIT);

      // The event as one row is unchanged, cursor and version included.
      expect(await snapshot(c, 'dead_letters_current')).toEqual(before);
      expect((await c.query(CURSOR('dead_letters_current'))).rows[0]).toEqual(cursorBefore);
      // A subscriber standing at the old cursor is not sent anything again...
      const { xid, change_id: changeId } = cursorBefore;
      const after = `select id from dead_letters_current where (change_xid, change_id) > ($1::text::xid8, $2::bigint) order by change_xid, change_id`;
      expect((await c.query(after, [xid, changeId])).rows).toEqual([]);
      // ...and sees the next change of an event after it.
      await c.query(`update dead_letter_states set status = 'RESOLVED', resolved_by = 'ops' where id = 120004`);
      expect((await c.query(after, [xid, changeId])).rows).toEqual([{ id: '120004' }]);

      // The rollups still equal a scan, and the state rows are exactly the events.
      const { rollups, scan, signatures, signatureScan } = await ledgersAndScans(c);
      expect(rollups).toEqual(scan);
      expect(signatures).toEqual(signatureScan);
      const { rows: [counts] } = await c.query(`select (select count(*)::int from dead_letters) as events,
        (select count(*)::int from dead_letter_states) as states,
        (select count(*)::int from dead_letter_states s where not exists (select 1 from dead_letters d where d.id = s.id)) as orphans`);
      expect(counts).toEqual({ events: 12, states: 12, orphans: 0 });
    } finally {
      await c.end();
    }
  });
});
