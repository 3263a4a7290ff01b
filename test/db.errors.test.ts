import { afterEach, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../src/db/createDb.ts';
import { classifyDatabaseError } from '../src/db/errors.ts';
import { useTestDatabase } from './helpers/db.ts';
import { freePort } from './helpers/postgres.ts';
import { testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
const handles: DbHandle[] = [];

function db(url: string, options: { acquireTimeoutMs?: number; statementTimeoutMs?: number } = {}) {
  const handle = createDb(url, { poolMax: 1, acquireTimeoutMs: 500, statementTimeoutMs: 5_000, applicationName: 'lazarus-test', ...options });
  handles.push(handle);
  return handle;
}

async function failureOf(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the query to fail');
}

afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.close()));
});

describe('classifyDatabaseError', () => {
  it('calls an unreachable server unavailable', async () => {
    const down = db(`postgresql://postgres@127.0.0.1:${await freePort()}/x`);
    expect(classifyDatabaseError(await failureOf(down.db.deadLetter.findMany()))).toBe('unavailable');
    expect(classifyDatabaseError(await failureOf(down.db.$queryRaw`select 1`))).toBe('unavailable');
  });

  it('calls an exhausted pool unavailable', async () => {
    const busy = db(t.url, { acquireTimeoutMs: 200 });
    const holding = busy.db.$executeRaw`select pg_sleep(1)`.then(() => undefined);
    expect(classifyDatabaseError(await failureOf(busy.db.deadLetter.count()))).toBe('unavailable');
    await holding;
  });

  it('calls a statement timeout a timeout', async () => {
    const slow = db(t.url, { statementTimeoutMs: 100 });
    expect(classifyDatabaseError(await failureOf(slow.db.$executeRaw`select pg_sleep(2)`))).toBe('timeout');
  });

  it('leaves real bugs alone', async () => {
    expect(classifyDatabaseError(await failureOf(t.db.$queryRaw`select no_such_column from dead_letters`))).toBeUndefined();
    expect(classifyDatabaseError(new TypeError('x is undefined'))).toBeUndefined();
  });
});

describe('the API while the database is down', () => {
  it('answers 503 SERVICE_UNAVAILABLE with a retry hint and no connection details', async () => {
    const port = await freePort();
    const down = db(`postgresql://postgres:pw@127.0.0.1:${port}/x`);
    const server = testServer(down.db, { isReady: async () => false });

    const response = await server.fetch('http://lazarus/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ deadLetters { totalCount } }' }),
    });
    const text = await response.text();

    expect(response.status).toBe(503);
    expect(JSON.parse(text).errors[0]).toMatchObject({ message: 'the database is unavailable; try again shortly', extensions: { code: 'SERVICE_UNAVAILABLE' } });
    expect(text).not.toContain(String(port));
    expect((await server.fetch('http://lazarus/ready')).status).toBe(503);
  });
});
