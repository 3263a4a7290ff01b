// A deleted dead letter is a change like any other: it reaches deadLetterChanged with a cursor, in
// order, replayable, whoever deleted it (the API, retention, plain SQL), and stats streams refresh.
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { purgeFinishedDeadLetters } from '../src/db/sql/purgeFinishedDeadLetters.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { startLiveServer, type LiveServer } from './helpers/live.ts';
import { subscribeSse } from './helpers/sse.ts';

const t = useTestDatabase();
let live: LiveServer | undefined;
afterEach(async () => {
  await live?.close();
  live = undefined;
});

const CHANGES = `subscription ($after: String, $filter: DeadLetterFilter) {
  deadLetterChanged(after: $after, filter: $filter) {
    cursor deleted deadLetterId deadLetter { id status } removed { id eventType queue status deletedAt }
  }
}`;
interface Change {
  cursor: string;
  deleted: boolean;
  deadLetterId: string;
  deadLetter: { id: string; status: string } | null;
  removed: { id: string; eventType: string; queue: string; status: string; deletedAt: string } | null;
}
type Changes = { deadLetterChanged: Change };

async function graphql(url: string, query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  return (await response.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
}

describe('deletions on the live feed', () => {
  it('streams a deletion by deleteDeadLetters with its id, filter fields and a cursor', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const sub = await subscribeSse<Changes>(live.url, CHANGES, { filter: { queues: ['billing'] } });
    const row = await insertDeadLetter(t.db, { queue: 'billing', status: 'EXHAUSTED' });
    const [inserted] = await sub.take(1);

    const deleted = await graphql(live.url, 'mutation ($ids: [ID!]) { deleteDeadLetters(input: { ids: $ids }) { __typename } }', { ids: [row.id.toString()] });
    const [removal] = await sub.take(1);
    sub.close();

    expect(deleted.errors).toBeUndefined();
    expect(inserted!.data!.deadLetterChanged).toMatchObject({ deleted: false, deadLetterId: row.id.toString(), removed: null });
    expect(removal!.data!.deadLetterChanged).toMatchObject({
      deleted: true, deadLetterId: row.id.toString(), deadLetter: null,
      removed: { id: row.id.toString(), eventType: 'order.placed', queue: 'billing', status: 'EXHAUSTED' },
    });
    expect(removal!.data!.deadLetterChanged.cursor).not.toBe(inserted!.data!.deadLetterChanged.cursor);
  });

  it('streams a plain SQL DELETE and a retention purge, and leaves out deletions the filter excludes', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const old = new Date(Date.now() - 40 * 86_400_000);
    const bySql = await insertDeadLetter(t.db, { queue: 'billing' });
    const other = await insertDeadLetter(t.db, { queue: 'shipping' });
    const finished = await insertDeadLetter(t.db, { queue: 'billing', status: 'SUCCEEDED', resolvedAt: old, nextAttemptAt: null });
    // The feed has published the inserts before the subscriber joins: it must see only the deletions.
    await live.feed.caughtUp();
    const sub = await subscribeSse<Changes>(live.url, CHANGES, { filter: { queues: ['billing'] } });

    await t.handle.pool.query('delete from dead_letters where id = any($1::bigint[])', [[bySql.id.toString(), other.id.toString()]]);
    expect((await purgeFinishedDeadLetters(t.db, 30 * 86_400_000, 100))?.purged).toBe(1);
    const events = await sub.take(2);
    sub.close();

    expect(events.map((e) => [e.data!.deadLetterChanged.deadLetterId, e.data!.deadLetterChanged.deleted])).toEqual([
      [bySql.id.toString(), true],
      [finished.id.toString(), true],
    ]);
  });

  it('replays a deletion, in order, to a subscriber resuming from an earlier cursor', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const first = await subscribeSse<Changes>(live.url, CHANGES);
    const a = await insertDeadLetter(t.db);
    const [seenA] = await first.take(1);
    first.close();

    const b = await insertDeadLetter(t.db);
    await t.handle.pool.query('delete from dead_letters where id = $1', [a.id.toString()]);
    const c = await insertDeadLetter(t.db);
    const resumed = await subscribeSse<Changes>(live.url, CHANGES, { after: seenA!.data!.deadLetterChanged.cursor });
    const replayed = await resumed.take(3);
    resumed.close();

    expect(replayed.map((e) => [e.data!.deadLetterChanged.deadLetterId, e.data!.deadLetterChanged.deleted])).toEqual([
      [b.id.toString(), false],
      [a.id.toString(), true],
      [c.id.toString(), false],
    ]);
  });

  it('refreshes deadLetterStatsChanged after a deletion', async () => {
    live = await startLiveServer({ databaseUrl: t.url, db: t.db });
    const row = await insertDeadLetter(t.db);
    const sub = await subscribeSse<{ deadLetterStatsChanged: { total: number } }>(live.url, 'subscription { deadLetterStatsChanged { total } }');
    const [before] = await sub.take(1);

    await t.handle.pool.query('delete from dead_letters where id = $1', [row.id.toString()]);
    const [after] = await sub.take(1);
    sub.close();

    expect(before!.data!.deadLetterStatsChanged.total).toBe(1);
    expect(after!.data!.deadLetterStatsChanged.total).toBe(0);
  });

  it('sends one NOTIFY hint for a bulk delete, not one per row', async () => {
    for (let i = 0; i < 300; i++) await insertDeadLetter(t.db);
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    const hints: { t: string; op: string; n: number }[] = [];
    client.on('notification', (n) => hints.push(JSON.parse(n.payload!)));
    await client.query('listen lazarus_changes');
    try {
      await t.handle.pool.query('delete from dead_letters');
      // A NOTIFY sent by a committed transaction is delivered before the answer to a later query.
      await client.query('select 1');
    } finally {
      await client.end();
    }

    expect(hints.filter((h) => h.t === 'dead_letter_tombstones')).toEqual([expect.objectContaining({ op: 'insert', n: 300 })]);
    expect(await t.db.deadLetterTombstone.count()).toBe(300);
  });
});
