import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();

async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: t.url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

describe('a dead letter written with plain SQL', () => {
  it('gets sensible defaults for every column the producer leaves out', async () => {
    // The current state is on dead_letter_states; dead_letters_current shows the event as one row.
    const row = await withClient(async (c) => {
      await c.query('BEGIN');
      const { id, tx_now } = (await c.query(
        `INSERT INTO dead_letters (event_type, payload, error_message)
         VALUES ('order.placed', '{"orderId": 7}', 'HTTP 503 from inventory-service')
         RETURNING id, now() as tx_now`,
      )).rows[0];
      const r = await c.query(`SELECT *, change_xid::text as xid FROM dead_letters_current WHERE id = $1`, [id]);
      await c.query('COMMIT');
      return { ...r.rows[0], tx_now };
    });

    expect(row).toMatchObject({
      event_type: 'order.placed',
      queue: 'default',
      source: 'unknown',
      payload: { orderId: 7 },
      headers: {},
      error_kind: 'UNKNOWN',
      error_message: 'HTTP 503 from inventory-service',
      error_stack: null,
      status: 'PENDING',
      attempts: 0,
      max_attempts: null,
      lease_owner: null,
      resolved_at: null,
      version: 0,
    });
    expect(row.next_attempt_at).toEqual(row.tx_now);
    expect(row.created_at).toEqual(row.tx_now);
    expect(BigInt(row.change_id)).toBeGreaterThan(0n);
    expect(BigInt(row.xid)).toBeGreaterThan(0n);
  });

  it('is stamped with a fresh change cursor and version on every update, whatever the writer sends', async () => {
    await withClient(async (c) => {
      const inserted = (await c.query(
        `INSERT INTO dead_letters_current (event_type, change_id, version) VALUES ('a', 1, 99) RETURNING id, change_id, version`,
      )).rows[0];
      const updated = (await c.query(
        `UPDATE dead_letters_current SET error_message = 'x', change_id = 1 WHERE id = $1 RETURNING change_id, version`,
        [inserted.id],
      )).rows[0];

      expect(BigInt(inserted.change_id)).not.toBe(1n);
      expect(BigInt(updated.change_id)).toBeGreaterThan(BigInt(inserted.change_id));
      expect(inserted.version).toBe(0);
      expect(updated.version).toBe(1);
    });
  });

  it('advances version and the cursor once per transaction, however many statements or tables it writes', async () => {
    await withClient(async (c) => {
      const { rows: ids } = await c.query(`INSERT INTO dead_letters (event_type, status, attempts)
                                           SELECT 'a', 'EXHAUSTED', 3 FROM generate_series(1, 4) RETURNING id`);
      const [payloadOnly, throughView, payloadFirst, stateFirst] = ids.map((r) => r.id as string) as [string, string, string, string];
      const stamp = async (id: string) =>
        (await c.query(`select version, change_id, change_xid::text as xid from dead_letter_states where id = $1`, [id])).rows[0];
      const inOneTransaction = async (id: string, statements: string[]) => {
        await c.query('BEGIN');
        const { xid } = (await c.query('select pg_current_xact_id()::text as xid')).rows[0];
        await c.query(statements[0]!, [id]);
        const first = await stamp(id);
        for (const statement of statements.slice(1)) await c.query(statement, [id]);
        await c.query('COMMIT');
        return { xid, first };
      };
      const payload = `UPDATE dead_letters SET payload = '{"fixed": true}' WHERE id = $1`;
      const requeue = `UPDATE dead_letter_states SET status = 'PENDING', next_attempt_at = now() WHERE id = $1`;

      const alone = await inOneTransaction(payloadOnly, [payload]);
      expect(await stamp(payloadOnly)).toEqual({ version: 1, change_id: alone.first.change_id, xid: alone.xid });
      await c.query(`UPDATE dead_letters_current SET payload = '{"fixed": true}', status = 'PENDING' WHERE id = $1`, [throughView]);
      expect(await stamp(throughView)).toMatchObject({ version: 1 });
      for (const [id, statements] of [[payloadFirst, [payload, requeue]], [stateFirst, [requeue, payload]]] as const) {
        const { xid, first } = await inOneTransaction(id, [...statements]);
        // The first write's stamp stands: one version, one feed position, the transaction's xid.
        expect(await stamp(id)).toEqual({ version: 1, change_id: first.change_id, xid });
      }
      const after = await c.query(`select count(*)::int as n from dead_letters_current where status = 'PENDING' and payload = '{"fixed": true}'`);
      expect(after.rows[0].n).toBe(3);
      await c.query(`UPDATE dead_letter_states SET attempts = 0 WHERE id = $1`, [stateFirst]);
      expect(await stamp(stateFirst)).toMatchObject({ version: 2 });
    });
  });

  it('keeps resolved_at in step with the status', async () => {
    await withClient(async (c) => {
      const { id } = (await c.query(`INSERT INTO dead_letters (event_type) VALUES ('a') RETURNING id`)).rows[0];
      const resolved = (await c.query(
        `UPDATE dead_letters_current SET status = 'RESOLVED', resolved_by = 'ops', resolution_reason = 'fixed by hand'
          WHERE id = $1 RETURNING resolved_at, resolved_by`,
        [id],
      )).rows[0];
      const reopened = (await c.query(
        `UPDATE dead_letters_current SET status = 'PENDING' WHERE id = $1 RETURNING resolved_at, resolved_by, resolution_reason`,
        [id],
      )).rows[0];

      expect(resolved.resolved_at).toBeInstanceOf(Date);
      expect(resolved.resolved_by).toBe('ops');
      expect(reopened).toEqual({ resolved_at: null, resolved_by: null, resolution_reason: null });
    });
  });

  it.each([
    ['an empty event type', `INSERT INTO dead_letters (event_type) VALUES ('')`, 'dead_letters_event_type_check'],
    ['a payload over 256 KiB', `INSERT INTO dead_letters (event_type, payload) VALUES ('a', jsonb_build_object('x', repeat('y', 262200)))`, 'dead_letters_payload_size_check'],
    ['headers that are not an object', `INSERT INTO dead_letters (event_type, headers) VALUES ('a', '[1]')`, 'dead_letters_headers_size_check'],
    ['PROCESSING without a lease', `INSERT INTO dead_letters (event_type, status) VALUES ('a', 'PROCESSING')`, 'dead_letter_states_lease_check'],
    ['a lease on a PENDING row', `INSERT INTO dead_letters (event_type, lease_owner, lease_token, lease_expires_at) VALUES ('a', 'w', gen_random_uuid(), now())`, 'dead_letter_states_lease_check'],
    // On dead_letters a NULL due time is "due now" (the input's default); the view stores what it is given.
    ['PENDING with no due time', `INSERT INTO dead_letters_current (event_type, next_attempt_at) VALUES ('a', NULL)`, 'dead_letter_states_pending_due_check'],
    ['negative attempts', `INSERT INTO dead_letters (event_type, attempts) VALUES ('a', -1)`, 'dead_letter_states_attempts_check'],
    ['a zero max-attempts override', `INSERT INTO dead_letters (event_type, max_attempts) VALUES ('a', 0)`, 'dead_letters_max_attempts_check'],
  ])('rejects %s and writes nothing', async (_name, sql, constraint) => {
    await withClient(async (c) => {
      await expect(c.query(sql)).rejects.toMatchObject({ code: '23514', constraint });
      const count = await c.query('select count(*)::int as n from dead_letters_current');
      expect(count.rows[0].n).toBe(0);
    });
  });

  it('stores a dedupe key at most once', async () => {
    await withClient(async (c) => {
      await c.query(`INSERT INTO dead_letters (event_type, dedupe_key) VALUES ('a', 'k1')`);
      await expect(c.query(`INSERT INTO dead_letters (event_type, dedupe_key) VALUES ('a', 'k1')`)).rejects.toMatchObject({
        code: '23505',
        constraint: 'dead_letters_dedupe_key_key',
      });
      await c.query(`INSERT INTO dead_letters (event_type) VALUES ('a'), ('a')`);
      expect((await c.query('select count(*)::int as n from dead_letters_current')).rows[0].n).toBe(3);
    });
  });
});

describe('the queue state in psql', () => {
  const STATE_INPUTS = `status, attempts, next_attempt_at, lease_owner, lease_token, lease_expires_at, resolved_at, resolved_by, resolution_reason`;
  const ALL_NULL = {
    status: null, attempts: null, next_attempt_at: null, lease_owner: null, lease_token: null, lease_expires_at: null,
    resolved_at: null, resolved_by: null, resolution_reason: null,
  };

  it('is never read stale from dead_letters: its state columns read NULL, and changing them there is refused with where to go', async () => {
    await withClient(async (c) => {
      const { rows: [{ id }] } = await c.query(`INSERT INTO dead_letters (event_type) VALUES ('a') RETURNING id`);
      await c.query(`UPDATE dead_letters_current SET status = 'RESOLVED', resolved_by = 'ops' WHERE id = $1`, [id]);
      expect((await c.query(`select ${STATE_INPUTS} from dead_letters where id = $1`, [id])).rows[0]).toEqual(ALL_NULL);
      expect((await c.query('select status, resolved_by, version from dead_letters_current where id = $1', [id])).rows[0])
        .toEqual({ status: 'RESOLVED', resolved_by: 'ops', version: 1 });

      await expect(c.query(`UPDATE dead_letters SET status = 'PENDING' WHERE id = $1`, [id]))
        .rejects.toMatchObject({ code: 'LZ422', message: expect.stringContaining('dead_letters_current') });
      expect((await c.query('select status, version from dead_letters_current where id = $1', [id])).rows[0]).toEqual({ status: 'RESOLVED', version: 1 });
    });
  });

  it('takes the state columns a producer names in its INSERT as the initial state, and keeps none of them on dead_letters', async () => {
    await withClient(async (c) => {
      const { rows: [{ id }] } = await c.query(
        `INSERT INTO dead_letters (event_type, status, attempts, resolved_by) VALUES ('a', 'RESOLVED', 2, 'importer') RETURNING id`);
      const { rows: [{ id: later }] } = await c.query(
        `INSERT INTO dead_letters (event_type, dedupe_key, next_attempt_at) VALUES ('a', 'k1', now() + interval '1 hour')
         ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`);
      expect((await c.query(`select ${STATE_INPUTS} from dead_letters order by id`)).rows).toEqual([ALL_NULL, ALL_NULL]);
      const current = await c.query(`select id, status, attempts, resolved_by, next_attempt_at > now() as later
                                       from dead_letters_current order by id`);
      expect(current.rows).toEqual([
        { id, status: 'RESOLVED', attempts: 2, resolved_by: 'importer', later: false },
        { id: later, status: 'PENDING', attempts: 0, resolved_by: null, later: true },
      ]);
      // The statistics counted each event with the state it was given.
      const counts = await c.query(`select status, sum(count)::int as n, sum(attempts)::int as attempts
                                      from dead_letter_rollups group by status order by status`);
      expect(counts.rows).toEqual([{ status: 'PENDING', n: 1, attempts: 0 }, { status: 'RESOLVED', n: 1, attempts: 2 }]);

      // A duplicate that names state columns is skipped whole: no state row without its event.
      const again = await c.query(`INSERT INTO dead_letters (event_type, dedupe_key, attempts) VALUES ('a', 'k1', 7)
                                   ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`);
      expect(again.rows).toEqual([]);
      const orphans = await c.query(`select count(*)::int as n from dead_letter_states s where not exists (select from dead_letters d where d.id = s.id)`);
      expect(orphans.rows[0].n).toBe(0);
    });
  });

  it('serves the ops queries of psql users from dead_letters_current, and says so in the comments psql shows', async () => {
    await withClient(async (c) => {
      await c.query(`INSERT INTO dead_letters (event_type, created_at) VALUES ('a', now() - interval '2 hours'), ('a', now()), ('b', now())`);
      await c.query(`UPDATE dead_letters_current SET status = 'EXHAUSTED', attempts = 5 WHERE event_type = 'b'`);
      const byStatus = await c.query(`SELECT status, count(*)::int AS n FROM dead_letters_current GROUP BY status ORDER BY status`);
      expect(byStatus.rows).toEqual([{ status: 'PENDING', n: 2 }, { status: 'EXHAUSTED', n: 1 }]);
      const oldest = await c.query(`SELECT event_type, now() - min(created_at) > interval '1 hour' AS old
                                      FROM dead_letters_current WHERE status = 'PENDING' GROUP BY event_type`);
      expect(oldest.rows).toEqual([{ event_type: 'a', old: true }]);

      const { rows } = await c.query(`
        select a.attname as column, col_description(a.attrelid, a.attnum) as comment
          from pg_attribute a
         where a.attrelid = 'dead_letters'::regclass and not a.attisdropped
           and a.attname in ('status', 'attempts', 'next_attempt_at', 'lease_owner', 'lease_token', 'lease_expires_at',
                             'resolved_at', 'resolved_by', 'resolution_reason')`);
      expect(rows).toHaveLength(9);
      for (const row of rows) expect(row.comment, row.column).toMatch(/always NULL.*dead_letters_current/);
      expect((await c.query(`select obj_description('dead_letters'::regclass, 'pg_class') as d`)).rows[0].d).toContain('dead_letters_current');
      expect((await c.query(`select obj_description('dead_letters_current'::regclass, 'pg_class') as d`)).rows[0].d).toMatch(/current queue state/);
    });
  });
});

describe('the error signature of a plain SQL row', () => {
  it('is the message signature, whatever the producer writes into it', async () => {
    await withClient(async (c) => {
      const { rows: [row] } = await c.query(`INSERT INTO dead_letters (event_type, error_message, error_signature)
                                              VALUES ('a', 'HTTP 503 (request 12)', 'forged') RETURNING id, error_signature`);
      expect(row.error_signature).toBe('HTTP <n> (request <n>)');
      const signature = async () => (await c.query('select error_signature from dead_letters where id = $1', [row.id])).rows[0].error_signature;
      await c.query(`UPDATE dead_letters SET error_signature = 'forged' WHERE id = $1`, [row.id]);
      expect(await signature()).toBe('HTTP <n> (request <n>)');
      await c.query(`UPDATE dead_letters SET error_message = 'timeout after 30 s' WHERE id = $1`, [row.id]);
      expect(await signature()).toBe('timeout after <n> s');
      const { rows: [group] } = await c.query(`select error_group_id = lazarus_error_group_id(event_type, error_kind, error_signature) as matches
                                                 from dead_letters where id = $1`, [row.id]);
      expect(group.matches).toBe(true);
    });
  });
});

describe('the error-text search copy', () => {
  it('follows inserts, error-text updates, deletes and truncates, and is left alone by status changes', async () => {
    const texts = (c: pg.Client) =>
      c.query(`select d.id::int, t.error_message, t.error_stack from dead_letters_current d full join dead_letter_error_texts t on t.dead_letter_id = d.id order by 1`).then((r) => r.rows);
    await withClient(async (c) => {
      await c.query(`INSERT INTO dead_letters (event_type, error_message, error_stack) VALUES ('a', 'HTTP 503', 'at f()'), ('b', 'timeout', null)`);
      expect(await texts(c)).toEqual([
        { id: 1, error_message: 'HTTP 503', error_stack: 'at f()' },
        { id: 2, error_message: 'timeout', error_stack: null },
      ]);
      const before = (await c.query(`select xmin::text from dead_letter_error_texts where dead_letter_id = 1`)).rows[0].xmin;
      await c.query(`UPDATE dead_letters_current SET status = 'RESOLVED', resolved_by = 'x', resolution_reason = 'y' WHERE id = 1`);
      expect((await c.query(`select xmin::text from dead_letter_error_texts where dead_letter_id = 1`)).rows[0].xmin).toBe(before);

      await c.query(`UPDATE dead_letters_current SET error_stack = 'at g()' WHERE id = 1`);
      await c.query(`UPDATE dead_letters_current SET error_message = 'gone' WHERE id = 2`);
      await c.query(`DELETE FROM dead_letters WHERE id = 1`);
      expect(await texts(c)).toEqual([{ id: 2, error_message: 'gone', error_stack: null }]);
      await c.query('TRUNCATE dead_letters, delivery_attempts');
      expect(await texts(c)).toEqual([]);
    });
  });
});

describe('the NOTIFY hint', () => {
  async function collectHints(fn: (writer: pg.Client) => Promise<void>): Promise<Record<string, unknown>[]> {
    return withClient(async (listener) => {
      const hints: Record<string, unknown>[] = [];
      listener.on('notification', (n) => hints.push(JSON.parse(n.payload ?? 'null')));
      await listener.query('LISTEN lazarus_changes');
      await withClient(fn);
      // Round trip on the listener: notifications committed before this query arrive before its result.
      await listener.query('select 1');
      return hints;
    });
  }

  it('sends one small hint per statement with ids and the highest change id, never the payload', async () => {
    const hints = await collectHints(async (w) => {
      await w.query(`INSERT INTO dead_letters (event_type, payload) VALUES ('a', '{"secret": "s1"}'), ('a', '{"secret": "s2"}'), ('a', '{}')`);
    });

    expect(hints).toHaveLength(1);
    const rows = await withClient(async (c) => (await c.query('select id, change_id from dead_letters_current order by id')).rows);
    expect(hints[0]).toEqual({
      t: 'dead_letters',
      op: 'insert',
      n: 3,
      max: Math.max(...rows.map((r) => Number(r.change_id))),
      ids: rows.map((r) => Number(r.id)),
    });
    expect(JSON.stringify(hints)).not.toContain('secret');
  });

  it('caps the ids in a hint at 50 but still counts every row', async () => {
    const hints = await collectHints(async (w) => {
      await w.query(`INSERT INTO dead_letters (event_type) SELECT 'bulk' FROM generate_series(1, 120)`);
    });

    expect(hints).toHaveLength(1);
    expect(hints[0]).toMatchObject({ t: 'dead_letters', op: 'insert', n: 120 });
    expect(hints[0]!.ids).toHaveLength(50);
  });

  it('sends nothing for a statement that changes no rows, and is delivered only on commit', async () => {
    const hints = await collectHints(async (w) => {
      await w.query(`UPDATE dead_letters_current SET queue = 'x' WHERE false`);
      await w.query('BEGIN');
      await w.query(`INSERT INTO dead_letters (event_type) VALUES ('rolled-back')`);
      await w.query('ROLLBACK');
    });

    expect(hints).toEqual([]);
  });

  it('sends one hint, naming the final change id, for a transaction that writes the state and the payload', async () => {
    const id = await withClient(async (c) => (await c.query(`INSERT INTO dead_letters (event_type, status) VALUES ('a', 'EXHAUSTED') RETURNING id`)).rows[0].id);
    const hints = await collectHints(async (w) => {
      await w.query('BEGIN');
      await w.query(`UPDATE dead_letter_states SET status = 'PENDING', next_attempt_at = now() WHERE id = $1`, [id]);
      await w.query(`UPDATE dead_letters SET payload = '{"fixed": true}' WHERE id = $1`, [id]);
      await w.query('COMMIT');
    });

    const { change_id } = await withClient(async (c) => (await c.query('select change_id from dead_letter_states where id = $1', [id])).rows[0]);
    expect(hints).toEqual([{ t: 'dead_letters', op: 'update', n: 1, max: Number(change_id), ids: [Number(id)] }]);
  });

  it('hints delivery attempts too', async () => {
    const hints = await collectHints(async (w) => {
      const { id } = (await w.query(`INSERT INTO dead_letters (event_type) VALUES ('a') RETURNING id`)).rows[0];
      await w.query(
        `INSERT INTO delivery_attempts (dead_letter_id, attempt_number, worker_id, duration_ms, outcome) VALUES ($1, 1, 'w1', 12, 'FAILED')`,
        [id],
      );
    });

    expect(hints.map((h) => [h.t, h.op])).toEqual([
      ['dead_letters', 'insert'],
      ['delivery_attempts', 'insert'],
    ]);
  });
});
