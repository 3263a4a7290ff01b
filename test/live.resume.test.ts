// Resuming with a cursor across a real restart of the service, and cursor validation.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { startService, type RunningService } from '../src/service.ts';
import { useTestDatabase } from './helpers/db.ts';
import { subscribeSse, type SseSubscription } from './helpers/sse.ts';

const t = useTestDatabase();
const logger = pino({ level: 'silent' });
const services: RunningService[] = [];
const open: SseSubscription<unknown>[] = [];

afterEach(async () => {
  for (const s of open.splice(0)) s.close();
  for (const s of services.splice(0)) await s.close();
});

async function start(): Promise<RunningService> {
  const service = await startService(loadConfig({ NODE_ENV: 'test', DATABASE_URL: t.url, PORT: '0' }), logger);
  services.push(service);
  return service;
}

type Changed = { deadLetterChanged: { cursor: string; isNew: boolean; deadLetter: { id: string; status: string } } };
const CHANGED = `subscription ($after: String, $filter: DeadLetterFilter) {
  deadLetterChanged(after: $after, filter: $filter) { cursor isNew deadLetter { id status } }
}`;

async function subscribe(service: RunningService, variables: Record<string, unknown> = {}) {
  const s = await subscribeSse<Changed>(`${service.url}/graphql`, CHANGED, variables);
  open.push(s as SseSubscription<unknown>);
  return s;
}

async function insertRow(): Promise<string> {
  const [row] = await t.db.$queryRaw<{ id: bigint }[]>`insert into dead_letters (event_type) values ('order.placed') returning id`;
  return row!.id.toString();
}

const view = (m: { data?: Changed | null }) => {
  const { isNew, deadLetter } = m.data!.deadLetterChanged;
  return { id: deadLetter.id, status: deadLetter.status, isNew };
};

describe('resuming deadLetterChanged with a cursor', () => {
  it('replays exactly the changes missed while the service was down, then continues live without duplicates', async () => {
    const first = await start();
    const before = await subscribe(first);
    const a = await insertRow();
    const b = await insertRow();
    const seen = await before.take(2);
    expect(seen.map(view)).toEqual([
      { id: a, status: 'PENDING', isNew: true },
      { id: b, status: 'PENDING', isNew: true },
    ]);
    const lastCursor = seen[1]!.data!.deadLetterChanged.cursor;
    before.close();
    await first.close();

    const c = await insertRow();
    await t.db.$executeRaw`update dead_letters_current set status = 'RESOLVED', resolved_by = 'ops' where id = ${BigInt(a)}`;

    const second = await start();
    const resumed = await subscribe(second, { after: lastCursor });
    expect((await resumed.take(2)).map(view)).toEqual([
      { id: c, status: 'PENDING', isNew: true },
      { id: a, status: 'RESOLVED', isNew: false },
    ]);
    const d = await insertRow();
    expect(view(await resumed.next())).toEqual({ id: d, status: 'PENDING', isNew: true });
  });

  it('replays with the filter applied', async () => {
    const service = await start();
    const first = await subscribe(service);
    await insertRow();
    const [start0] = await first.take(1);
    const b = await insertRow();
    await t.db.$executeRaw`update dead_letters_current set status = 'DISCARDED', resolved_by = 'ops' where id = ${BigInt(b)}`;
    await insertRow();
    const resumed = await subscribe(service, { after: start0!.data!.deadLetterChanged.cursor, filter: { statuses: ['DISCARDED'] } });
    expect(view(await resumed.next())).toEqual({ id: b, status: 'DISCARDED', isNew: false });
  });

  it.each(['', 'abc', Buffer.from('c2:1:1').toString('base64url'), Buffer.from('c1:-1:5').toString('base64url'), Buffer.from('c1:1:99999999999999999999').toString('base64url'), "'; drop table dead_letters; --"])(
    'answers BAD_USER_INPUT for the cursor %j and writes nothing',
    async (after) => {
      const service = await start();
      const s = await subscribe(service, { after });
      const message = await s.next();
      expect(message.errors).toHaveLength(1);
      expect(message.errors![0]!.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument: 'after' });
      expect(await t.db.deadLetter.count()).toBe(0);
    },
  );
});
