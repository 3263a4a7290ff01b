// `lazarus.change_hints = 'off'` (migration 20261202100000_change_hints_setting): a writer's
// transactions send no NOTIFY hint, so they do not queue on PostgreSQL's notify lock, and the
// change feed still serves their rows, by cursor, at its next poll (LIVE_POLL_MS).
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testPool, useTestDatabase } from './helpers/db.ts';
import { loadConfig } from '../src/config.ts';
import { startService, type RunningService } from '../src/service.ts';
import { silentLogger } from './helpers/retry.ts';
import { subscribeSse, type SseSubscription } from './helpers/sse.ts';

const t = useTestDatabase();
let sql: pg.Pool;
let listener: pg.Client;
const heard: string[] = [];
let service: RunningService | undefined;
let sub: SseSubscription<unknown> | undefined;

beforeAll(async () => {
  sql = testPool(t.url, { max: 4 });
  listener = new pg.Client({ connectionString: t.url });
  await listener.connect();
  listener.on('notification', (n) => heard.push(n.channel === 'lazarus_changes' ? JSON.parse(n.payload ?? '{}').op : `marker:${n.payload}`));
  await listener.query('listen lazarus_changes; listen change_hints_marker');
});
afterEach(async () => {
  sub?.close();
  sub = undefined;
  await service?.close();
  service = undefined;
});
afterAll(async () => {
  await listener.end();
  await sql.end();
});

/**
 * Runs `write` on one connection with `lazarus.change_hints` set as given, then sends a marker
 * NOTIFY. Notifications arrive in commit order, so once the marker is here every hint the write
 * sent has arrived before it. Returns those hints' ops.
 */
async function hintsOf(setting: string | null, write: (c: pg.PoolClient) => Promise<unknown>): Promise<string[]> {
  const client = await sql.connect();
  try {
    if (setting !== null) await client.query(`select set_config('lazarus.change_hints', $1, false)`, [setting]);
    heard.length = 0;
    await write(client);
    const marker = String(Math.random());
    const arrived = new Promise<void>((resolve) => {
      const onMarker = (n: pg.Notification) => {
        if (n.channel === 'change_hints_marker' && n.payload === marker) {
          listener.off('notification', onMarker);
          resolve();
        }
      };
      listener.on('notification', onMarker);
    });
    await client.query(`select pg_notify('change_hints_marker', $1)`, [marker]);
    await arrived;
    return heard.filter((h) => !h.startsWith('marker:'));
  } finally {
    await client.query(`select set_config('lazarus.change_hints', '', false)`);
    client.release();
  }
}

const insert = (c: pg.PoolClient) => c.query(`insert into dead_letters (event_type, payload) values ('t', '{}')`);
const resolveAll = (c: pg.PoolClient) => c.query(`update dead_letters_current set status = 'RESOLVED' where status = 'PENDING'`);

describe('lazarus.change_hints', () => {
  it('hints inserts and updates by default', async () => {
    expect(await hintsOf(null, insert)).toEqual(['insert']);
    expect(await hintsOf(null, resolveAll)).toEqual(['update']);
  });

  it.each(['off', ' OFF '])('sends no hint for an insert or an update when set to %j', async (value) => {
    expect(await hintsOf(value, insert)).toEqual([]);
    expect(await hintsOf(value, resolveAll)).toEqual([]);
  });

  it('keeps hints on for any other value', async () => {
    expect(await hintsOf('on', insert)).toEqual(['insert']);
    expect(await hintsOf('of', insert)).toEqual(['insert']);
  });

  it('still stamps, records and serves the rows: the service polls every LIVE_POLL_MS, and a subscriber gets them', async () => {
    service = await startService(loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, RETRY_ENABLED: 'false', LIVE_POLL_MS: '50' }), silentLogger);
    sub = await subscribeSse(`${service.url}/graphql`, 'subscription { deadLetterAdded { deadLetter { id eventType } } }', {});

    let id = '';
    expect(
      await hintsOf('off', async (c) => {
        id = (await c.query<{ id: string }>(`insert into dead_letters (event_type, payload) values ('quiet.insert', '{}') returning id::text`)).rows[0]!.id;
      }),
    ).toEqual([]);

    expect(await sub.next(10_000)).toEqual({ data: { deadLetterAdded: { deadLetter: { id, eventType: 'quiet.insert' } } } });
    const history = await sql.query(`select action from dead_letter_actions where dead_letter_id = $1`, [id]);
    expect(history.rows).toEqual([{ action: 'RECORDED' }]);
  });
});

// Migration 20261208100000_coalesced_change_hints: while one open transaction holds the hint turn,
// other writers send none; the feed reads their rows at the holder's hint or in its trailing reads.
describe('coalesced hints', () => {
  it('sends no hint for a writer while another open transaction holds a hint, and one again once it ended', async () => {
    const holder = await sql.connect();
    try {
      await holder.query('begin');
      await insert(holder);
      expect(await hintsOf(null, insert)).toEqual([]);
      // The holder's own hint, delivered at its commit.
      expect(await hintsOf(null, () => holder.query('commit'))).toEqual(['insert']);
    } finally {
      holder.release();
    }
    expect(await hintsOf(null, insert)).toEqual(['insert']);
  });

  it("hints every transaction's statements with lazarus.change_hints = 'each', turn or not", async () => {
    const holder = await sql.connect();
    try {
      await holder.query('begin');
      await insert(holder);
      expect(await hintsOf(' Each ', insert)).toEqual(['insert']);
      expect(await hintsOf(null, () => holder.query('commit'))).toEqual(['insert']);
    } finally {
      holder.release();
    }
  });

  it('serves the rows of writers that sent no hint, at the hint of the transaction that held the turn', async () => {
    // No poll in this test's lifetime: only hints and the reads that follow them serve the rows.
    service = await startService(loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, RETRY_ENABLED: 'false', LIVE_POLL_MS: '60000' }), silentLogger);
    sub = await subscribeSse(`${service.url}/graphql`, 'subscription { deadLetterAdded { deadLetter { eventType } } }', {});
    const holder = await sql.connect();
    try {
      await holder.query('begin');
      await holder.query(`insert into dead_letters (event_type, payload) values ('held.turn', '{}')`);
      const quiet = await hintsOf(null, (c) => c.query(`insert into dead_letters (event_type, payload) values ('no.hint', '{}')`));
      expect(quiet).toEqual([]);
      await holder.query('commit');
    } finally {
      holder.release();
    }
    const events = await sub.take(2);
    expect(events.map((e) => (e.data as { deadLetterAdded: { deadLetter: { eventType: string } } }).deadLetterAdded.deadLetter.eventType).sort())
      .toEqual(['held.turn', 'no.hint']);
  });
});
