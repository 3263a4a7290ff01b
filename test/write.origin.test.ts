import { beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';
import { writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
let server: GraphQLServer;
beforeAll(() => {
  server = writeServer(t.handle);
});

const RECORD_ONE = `mutation ($input: RecordDeadLetterInput!) {
  recordDeadLetter(input: $input) {
    __typename
    ... on RecordedDeadLetter { id deadLetter { origin } }
    ... on ValidationError { code field message }
  }
}`;

const AMQP_ORIGIN = { kind: 'amqp', bridge: 'orders', vhost: '/', queue: 'orders', exchange: 'shop', routingKeys: ['order.placed'] };

describe('origin', () => {
  it('is stored with the event and read back over GraphQL and from dead_letters_current', async () => {
    const { body } = await execute(server, RECORD_ONE, { input: { eventType: 'order.placed', payload: {}, origin: AMQP_ORIGIN } });
    expect(body).toEqual({ data: { recordDeadLetter: { __typename: 'RecordedDeadLetter', id: '1', deadLetter: { origin: AMQP_ORIGIN } } } });
    const { rows } = await t.handle.pool.query('select origin from dead_letters_current');
    expect(rows).toEqual([{ origin: AMQP_ORIGIN }]);
  });

  it('is null for an event recorded without one', async () => {
    const { body } = await execute(server, RECORD_ONE, { input: { eventType: 'order.placed', payload: {} } });
    expect(body).toEqual({ data: { recordDeadLetter: { __typename: 'RecordedDeadLetter', id: '1', deadLetter: { origin: null } } } });
  });

  it.each([
    ['an array', ['amqp'], 'origin', 'must be a JSON object'],
    ['no kind', { bridge: 'x' }, 'origin.kind', 'must be a lower-case name'],
    ['an upper-case kind', { kind: 'AMQP' }, 'origin.kind', 'must be a lower-case name'],
    ['over 8 KiB', { kind: 'amqp', routingKeys: ['k'.repeat(9000)] }, 'origin', 'must be at most 8192 bytes'],
  ])('refuses an origin with %s, writing nothing', async (_label, origin, field, message) => {
    const { body } = await execute<{ recordDeadLetter: { field: string; message: string } }>(server, RECORD_ONE, { input: { eventType: 'e', payload: {}, origin } });
    expect(body.data?.recordDeadLetter).toMatchObject({ __typename: 'ValidationError', field });
    expect(body.data?.recordDeadLetter.message).toContain(message);
    expect(await t.db.deadLetter.count()).toBe(0);
  });

  it('is refused by the table when it is not an object with a kind, and cannot be changed once written', async () => {
    await expect(t.handle.pool.query(`insert into dead_letters (event_type, origin) values ('e', '{"queue": "q"}')`))
      .rejects.toMatchObject({ code: '23514', constraint: 'dead_letters_origin_check' });
    await t.handle.pool.query(`insert into dead_letters (event_type, origin) values ('e', '{"kind": "redis", "stream": "s", "id": "1-0"}')`);
    await expect(t.handle.pool.query(`update dead_letters set origin = '{"kind": "redis", "stream": "t", "id": "1-0"}'`))
      .rejects.toMatchObject({ code: 'LZ422', message: expect.stringContaining('written once') });
    await expect(t.handle.pool.query(`update dead_letters_current set origin = null`)).rejects.toMatchObject({ code: 'LZ422' });
    const { rows } = await t.handle.pool.query('select origin from dead_letters');
    expect(rows).toEqual([{ origin: { kind: 'redis', stream: 's', id: '1-0' } }]);
  });

  it('goes in through the view, and the deprecated view lazarus_dead_letters still inserts and reads', async () => {
    await t.handle.pool.query(`insert into dead_letters_current (id, event_type, payload, headers, queue, source, error_kind, error_message, occurred_at, created_at, origin)
      values (10, 'e', '{}', '{}', 'q', 's', 'UNKNOWN', '', now(), now(), '{"kind": "nats", "stream": "S", "subject": "a.b", "sequence": 4}')`);
    await t.handle.pool.query(`insert into lazarus_dead_letters (id, event_type, payload, headers, queue, source, error_kind, error_message, occurred_at, created_at)
      values (11, 'e', '{}', '{}', 'q', 's', 'UNKNOWN', '', now(), now())`);
    const { rows } = await t.handle.pool.query('select id, origin from dead_letters_current order by id');
    expect(rows).toEqual([{ id: '10', origin: { kind: 'nats', stream: 'S', subject: 'a.b', sequence: 4 } }, { id: '11', origin: null }]);
    const old = await t.handle.pool.query('select id, status from lazarus_dead_letters order by id');
    expect(old.rows).toEqual([{ id: '10', status: 'PENDING' }, { id: '11', status: 'PENDING' }]);
  });
});
