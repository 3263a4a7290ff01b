import { beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/graphql/server.ts';
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
});
