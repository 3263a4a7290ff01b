// Lazarus's own connections run with JIT compilation off (createDb's withSessionOptions): its
// statements are small and their cost estimates grow with the table, so PostgreSQL compiled them,
// 10–12 ms each, once a backlog passed ~50,000 rows. A URL's own `options` still apply, and may
// turn it back on.
import { afterEach, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../src/db/createDb.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();
let handle: DbHandle | undefined;
afterEach(async () => {
  await handle?.close();
  handle = undefined;
});

async function settingsThrough(url: string): Promise<{ jit: string; work_mem: string; application_name: string }> {
  handle = createDb(url, { poolMax: 1, acquireTimeoutMs: 5_000, statementTimeoutMs: 15_000, applicationName: 'lazarus-test-options' });
  const { rows: [row] } = await handle.pool.query<{ jit: string; work_mem: string; application_name: string }>(
    `select current_setting('jit') as jit, current_setting('work_mem') as work_mem, current_setting('application_name') as application_name`);
  return row!;
}

const withOptions = (url: string, options: string) => {
  const u = new URL(url);
  u.searchParams.set('options', options);
  return u.href;
};

describe('session options', () => {
  it('turns JIT compilation off on the service\'s connections', async () => {
    expect(await settingsThrough(t.url)).toMatchObject({ jit: 'off', application_name: 'lazarus-test-options' });
  });

  it('keeps the options a URL gives, beside it', async () => {
    expect(await settingsThrough(withOptions(t.url, '-c work_mem=7MB'))).toMatchObject({ jit: 'off', work_mem: '7MB' });
  });

  it('lets a URL turn JIT back on', async () => {
    expect(await settingsThrough(withOptions(t.url, '-c jit=on'))).toMatchObject({ jit: 'on' });
  });
});
