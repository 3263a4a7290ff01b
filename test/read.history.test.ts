import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
let server: GraphQLServer;

beforeAll(() => {
  server = testServer(t.db);
});

const STORY = `query ($id: ID!) {
  deadLetter(id: $id) {
    history { action actor reason before after }
    timeline { at attempt { attemptNumber outcome } action { action actor } }
  }
}`;

const at = (s: number) => new Date(Date.UTC(2026, 10, 20, 10, 0, s));

describe('deadLetter(id) history and timeline', () => {
  it('tells the event’s story: actions in order with payload before/after, merged with attempts by time', async () => {
    const dl = await insertDeadLetter(t.db, { payload: { qty: 1 } });
    const other = await insertDeadLetter(t.db);
    // The story is written by hand here, the RECORDED step included (the insert wrote one of its own).
    await t.db.deadLetterAction.deleteMany({ where: { action: 'RECORDED' } });
    await t.db.deadLetterAction.createMany({
      data: [
        { deadLetterId: dl.id, action: 'RECORDED', actor: 'producer', createdAt: at(0) },
        { deadLetterId: dl.id, action: 'PAYLOAD_EDITED', actor: 'ana', reason: 'fix qty', before: { qty: 1 }, after: { qty: 2 }, createdAt: at(20) },
        { deadLetterId: other.id, action: 'DISCARDED', actor: 'bob', createdAt: at(5) },
        { deadLetterId: dl.id, action: 'REQUEUED', actor: 'ana', createdAt: at(20) },
      ],
    });
    await t.db.deliveryAttempt.createMany({
      data: [
        { deadLetterId: dl.id, attemptNumber: 2, workerId: 'w', durationMs: 5, outcome: 'SUCCEEDED', startedAt: at(30), finishedAt: at(30) },
        { deadLetterId: dl.id, attemptNumber: 1, workerId: 'w', durationMs: 5, outcome: 'FAILED', startedAt: at(10), finishedAt: at(11) },
      ],
    });

    const { body } = await execute(server, STORY, { id: dl.id.toString() });

    expect(body).toEqual({
      data: {
        deadLetter: {
          history: [
            { action: 'RECORDED', actor: 'producer', reason: null, before: null, after: null },
            { action: 'PAYLOAD_EDITED', actor: 'ana', reason: 'fix qty', before: { qty: 1 }, after: { qty: 2 } },
            { action: 'REQUEUED', actor: 'ana', reason: null, before: null, after: null },
          ],
          timeline: [
            { at: at(0).toISOString(), attempt: null, action: { action: 'RECORDED', actor: 'producer' } },
            { at: at(10).toISOString(), attempt: { attemptNumber: 1, outcome: 'FAILED' }, action: null },
            { at: at(20).toISOString(), attempt: null, action: { action: 'PAYLOAD_EDITED', actor: 'ana' } },
            { at: at(20).toISOString(), attempt: null, action: { action: 'REQUEUED', actor: 'ana' } },
            { at: at(30).toISOString(), attempt: { attemptNumber: 2, outcome: 'SUCCEEDED' }, action: null },
          ],
        },
      },
    });
  });

  it('reads a page’s histories and timelines with one statement each, each event’s story as deadLetter(id) tells it', async () => {
    const ids: bigint[] = [];
    for (let i = 0; i < 12; i++) {
      const dl = await insertDeadLetter(t.db);
      ids.push(dl.id);
      for (let k = 0; k < i % 4; k++) {
        await t.db.deadLetterAction.create({ data: { deadLetterId: dl.id, action: k % 2 ? 'REQUEUED' : 'RECORDED', actor: `actor-${i}-${k}`, createdAt: at(10 * k) } });
      }
      for (let n = i % 3; n >= 1; n--) {
        await t.db.deliveryAttempt.create({
          data: { deadLetterId: dl.id, attemptNumber: n, workerId: 'w', durationMs: n, outcome: 'FAILED', startedAt: at(10 * n + 5), finishedAt: at(10 * n + 6) },
        });
      }
    }
    const one = async (id: bigint) => (await execute<{ deadLetter: unknown }>(server, STORY, { id: id.toString() })).body.data!.deadLetter;
    const expected = new Map<string, unknown>();
    for (const id of ids) expected.set(id.toString(), await one(id));

    // Every statement the page makes, counted on the pg client the Prisma adapter uses.
    const query = pg.Client.prototype.query;
    let statements = 0;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      statements += 1;
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    let page;
    try {
      page = await execute<{ deadLetters: { edges: { node: { id: string } & Record<string, unknown> }[] } }>(server, `{
        deadLetters(first: 50) { edges { node { id history { action actor reason before after }
          timeline { at attempt { attemptNumber outcome } action { action actor } } } } } }`);
    } finally {
      pg.Client.prototype.query = query;
    }
    const nodes = page.body.data!.deadLetters.edges.map((e) => e.node);
    expect(nodes).toHaveLength(12);
    for (const { id, ...story } of nodes) expect(story).toEqual(expected.get(id));
    // The page, the actions of all its events, their attempts: 101 statements before.
    expect(statements).toBe(3);
  });
});

describe('the RECORDED step', () => {
  it('starts the story of a row inserted by plain SQL, once, at its creation, with the database role as actor', async () => {
    const { rows } = await t.handle.pool.query<{ id: string; created_at: Date; role: string }>(
      `insert into dead_letters (event_type, payload) values ('sql.made', '{}'), ('sql.made', '{}') returning id, created_at, session_user as role`);
    const recorded = await execute(server, 'mutation { recordDeadLetter(input: { eventType: "api.made", payload: {} }) { ... on RecordedDeadLetter { id } } }');
    const apiId = (recorded.body.data as { recordDeadLetter: { id: string } }).recordDeadLetter.id;

    const stories = await Promise.all([...rows.map((r) => r.id), apiId].map(async (id) =>
      (await execute<{ deadLetter: { history: { action: string; actor: string; createdAt: string }[] } }>(server, 'query ($id: ID!) { deadLetter(id: $id) { history { action actor createdAt } } }', { id })).body.data!.deadLetter.history));

    expect(stories[0]).toEqual([{ action: 'RECORDED', actor: `sql:${rows[0]!.role}`, createdAt: rows[0]!.created_at.toISOString() }]);
    expect(stories[1]).toEqual([{ action: 'RECORDED', actor: `sql:${rows[1]!.role}`, createdAt: rows[1]!.created_at.toISOString() }]);
    // The service writes its own RECORDED (with the caller's name) and gets no second one.
    expect(stories[2]!.map((h) => h.action)).toEqual(['RECORDED']);
    expect(stories[2]![0]!.actor).not.toMatch(/^sql:/);
  });
});
