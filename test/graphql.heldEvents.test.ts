import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { setPolicy } from './helpers/retry.ts';

const t = useTestDatabase();
let server: GraphQLServer;
let withHandler: GraphQLServer;

beforeAll(() => {
  server = testServer(t.db);
  withHandler = testServer(t.db, { inProcessEventTypes: ['local.job'] });
});

const HELD = `query ($ids: [ID!]) {
  deadLetters(filter: { ids: $ids }, first: 50) { edges { node { id status held { reason policyEventType headId } } } }
}`;
const COUNTS = '{ heldEventCounts { eventType policyEventType reason count } }';
const webhook = { targetUrl: 'https://hooks.example.com/x' };

async function holds(s: GraphQLServer, ids: bigint[]) {
  const { body } = await execute<{ deadLetters: { edges: { node: { id: string; status: string; held: unknown } }[] } }>(s, HELD, { ids: ids.map(String) });
  expect(body.errors).toBeUndefined();
  return Object.fromEntries(body.data!.deadLetters.edges.map((e) => [e.node.id, e.node.held]));
}

describe('held events over GraphQL', () => {
  it('says why each PENDING event is held: a paused type, no target, an EXHAUSTED key head', async () => {
    await setPolicy(t.db, 'order.paused', { ...webhook, paused: true });
    await setPolicy(t.db, 'order.ordered', { ...webhook, ordered: true });
    await setPolicy(t.db, 'order.flowing', webhook);
    const noTarget = await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'PENDING' });
    const paused = await insertDeadLetter(t.db, { eventType: 'order.paused', status: 'PENDING' });
    const head = await insertDeadLetter(t.db, { eventType: 'order.ordered', status: 'EXHAUSTED', orderingKey: 'k1', orderingSeq: 1n, nextAttemptAt: null });
    const behind = await insertDeadLetter(t.db, { eventType: 'order.ordered', status: 'PENDING', orderingKey: 'k1', orderingSeq: 2n });
    const pendingHead = await insertDeadLetter(t.db, { eventType: 'order.ordered', status: 'PENDING', orderingKey: 'k2', orderingSeq: 1n });
    const waiting = await insertDeadLetter(t.db, { eventType: 'order.ordered', status: 'PENDING', orderingKey: 'k2', orderingSeq: 2n });
    const flowing = await insertDeadLetter(t.db, { eventType: 'order.flowing', status: 'PENDING' });
    const exhausted = await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'EXHAUSTED', nextAttemptAt: null });

    expect(await holds(server, [noTarget.id, paused.id, head.id, behind.id, pendingHead.id, waiting.id, flowing.id, exhausted.id])).toEqual({
      [noTarget.id.toString()]: { reason: 'NO_TARGET', policyEventType: '*', headId: null },
      [paused.id.toString()]: { reason: 'PAUSED', policyEventType: 'order.paused', headId: null },
      [head.id.toString()]: null,
      [behind.id.toString()]: { reason: 'BLOCKED_KEY', policyEventType: 'order.ordered', headId: head.id.toString() },
      // Behind a head that is still being retried: waiting its turn, not held.
      [pendingHead.id.toString()]: null,
      [waiting.id.toString()]: null,
      [flowing.id.toString()]: null,
      [exhausted.id.toString()]: null,
    });
  });

  it('counts held events per type and reason, a type held as a whole counted once', async () => {
    await setPolicy(t.db, 'order.paused', { ...webhook, paused: true, ordered: true });
    await setPolicy(t.db, 'order.ordered', { ...webhook, ordered: true });
    for (let i = 0; i < 3; i++) await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'PENDING' });
    await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'EXHAUSTED', nextAttemptAt: null });
    await insertDeadLetter(t.db, { eventType: 'order.paused', status: 'EXHAUSTED', orderingKey: 'p', orderingSeq: 1n, nextAttemptAt: null });
    await insertDeadLetter(t.db, { eventType: 'order.paused', status: 'PENDING', orderingKey: 'p', orderingSeq: 2n });
    await insertDeadLetter(t.db, { eventType: 'order.ordered', status: 'EXHAUSTED', orderingKey: 'k', orderingSeq: 1n, nextAttemptAt: null });
    await insertDeadLetter(t.db, { eventType: 'order.ordered', status: 'PENDING', orderingKey: 'k', orderingSeq: 2n });
    await insertDeadLetter(t.db, { eventType: 'order.ordered', status: 'PENDING', orderingKey: 'k', orderingSeq: 3n });

    const { body } = await execute(server, COUNTS);
    expect(body).toEqual({
      data: {
        heldEventCounts: [
          { eventType: 'order.placed', policyEventType: '*', reason: 'NO_TARGET', count: 3 },
          { eventType: 'order.ordered', policyEventType: 'order.ordered', reason: 'BLOCKED_KEY', count: 2 },
          { eventType: 'order.paused', policyEventType: 'order.paused', reason: 'PAUSED', count: 1 },
        ],
      },
    });
  });

  it('does not hold a type an in-process handler delivers', async () => {
    const local = await insertDeadLetter(t.db, { eventType: 'local.job', status: 'PENDING' });
    expect(await holds(withHandler, [local.id])).toEqual({ [local.id.toString()]: null });
    expect(await holds(server, [local.id])).toEqual({ [local.id.toString()]: { reason: 'NO_TARGET', policyEventType: '*', headId: null } });
    expect((await execute(withHandler, COUNTS)).body).toEqual({ data: { heldEventCounts: [] } });
  });

  it('does not hold an event requeued to its source, which needs no policy target', async () => {
    const toSource = await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'PENDING' });
    const noTarget = await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'PENDING' });
    await t.db.$executeRaw`update dead_letter_states set deliver_to_source = true where id = ${toSource.id}`;

    expect(await holds(server, [toSource.id, noTarget.id])).toEqual({
      [toSource.id.toString()]: null,
      [noTarget.id.toString()]: { reason: 'NO_TARGET', policyEventType: '*', headId: null },
    });
    expect((await execute(server, COUNTS)).body).toEqual({
      data: { heldEventCounts: [{ eventType: 'order.placed', policyEventType: '*', reason: 'NO_TARGET', count: 1 }] },
    });
  });

  it('reads the holds of a page in one statement', async () => {
    for (let i = 0; i < 20; i++) await insertDeadLetter(t.db, { eventType: `type.${i % 4}`, status: 'PENDING' });
    const statementsOf = async (fields: string) => {
      // Every statement the page makes, counted on the pg client the Prisma adapter uses.
      const query = pg.Client.prototype.query;
      let statements = 0;
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        statements += 1;
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
      try {
        const { body } = await execute<{ deadLetters: { edges: { node: { held?: { reason: string } } }[] } }>(server, `{ deadLetters(first: 50) { edges { node { id ${fields} } } } }`);
        return { statements, nodes: body.data!.deadLetters.edges.map((e) => e.node) };
      } finally {
        pg.Client.prototype.query = query;
      }
    };
    const plain = await statementsOf('');
    const withHolds = await statementsOf('held { reason }');
    expect(withHolds.nodes.map((n) => n.held!.reason)).toEqual(Array(20).fill('NO_TARGET'));
    expect(withHolds.statements - plain.statements).toBe(1);
  });
});
