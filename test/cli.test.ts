// The `lazarus` command as a user runs it: a child process against the real service and database.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { startService, type RunningService } from '../src/service.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { untilSubscribed } from './helpers/live.ts';
import { silentLogger } from './helpers/retry.ts';

const BIN = fileURLToPath(new URL('../bin/lazarus.js', import.meta.url));
const OPERATOR = 'cli-operator-token-0123456789';
const VIEWER = 'cli-viewer-token-0123456789';
const t = useTestDatabase();
let service: RunningService;

beforeAll(async () => {
  service = await startService(
    loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, RETRY_ENABLED: 'false', LAZARUS_REDRIVE_THRESHOLD: '1000', LAZARUS_API_KEYS: `ops:operator:${OPERATOR},dash:viewer:${VIEWER}` }),
    silentLogger,
  );
});
afterAll(async () => service?.close());

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function spawnCli(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, LAZARUS_URL: `${service.url}/graphql`, LAZARUS_API_KEY: OPERATOR, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const done = new Promise<Run>((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
  return { child, done, stdout: () => stdout };
}
const cli = (args: string[], env?: Record<string, string>) => spawnCli(args, env).done;
const statusOf = async (id: bigint) => (await t.handle.pool.query('select status from lazarus_dead_letters where id = $1', [String(id)])).rows[0].status;

describe('lazarus CLI', () => {
  it('lists with filters, as a table and as JSON', async () => {
    const a = await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'EXHAUSTED', errorMessage: 'ledger refused' });
    await insertDeadLetter(t.db, { eventType: 'invoice.sent', status: 'EXHAUSTED' });
    await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'PENDING' });

    const json = await cli(['--json', 'list', '--type', 'order.placed', '--status', 'exhausted']);
    const table = await cli(['list', '--error-text', 'ledger']);

    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout);
    expect(parsed).toMatchObject({ count: 1, exact: true, rows: [{ id: String(a.id), status: 'EXHAUSTED', eventType: 'order.placed' }] });
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('ledger refused');
    expect(table.stdout).toMatch(/1 shown of 1 matching/);
  });

  it('shows one event with its payload and timeline, and says NOT_FOUND for an unknown id', async () => {
    const row = await insertDeadLetter(t.db, { payload: { orderId: 42 } });
    const shown = await cli(['--json', 'show', String(row.id)]);
    const missing = await cli(['show', '999999999']);

    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: String(row.id), payload: { orderId: 42 }, timeline: [expect.objectContaining({ action: expect.objectContaining({ action: 'RECORDED' }) })] });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/NOT_FOUND/);
  });

  it('requeues by filter: --dry-run writes nothing, --yes does it, neither is a usage error', async () => {
    const rows = await Promise.all([1, 2].map(() => insertDeadLetter(t.db, { eventType: 'refund.issued', status: 'EXHAUSTED' })));
    const other = await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'EXHAUSTED' });

    const unconfirmed = await cli(['requeue', '--type', 'refund.issued']);
    const dry = await cli(['--json', 'requeue', '--type', 'refund.issued', '--dry-run']);
    expect(await statusOf(rows[0]!.id)).toBe('EXHAUSTED');
    const done = await cli(['requeue', '--type', 'refund.issued', '--yes', '--reason', 'inventory back']);

    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toMatch(/--dry-run.*--yes/);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ count: 2, dryRun: true });
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/requeue 2 dead letters/);
    expect([await statusOf(rows[0]!.id), await statusOf(rows[1]!.id), await statusOf(other.id)]).toEqual(['PENDING', 'PENDING', 'EXHAUSTED']);
  });

  it('reports the API’s validation error with exit 1, and a viewer’s refusal with exit 3', async () => {
    const row = await insertDeadLetter(t.db, { status: 'EXHAUSTED' });
    const noReason = await cli(['resolve', '--ids', String(row.id), '--yes', '--reason', '']);
    const viewer = await cli(['discard', '--ids', String(row.id), '--yes', '--reason', 'x'], { LAZARUS_API_KEY: VIEWER });
    const wrongKey = await cli(['list'], { LAZARUS_API_KEY: 'not-a-key-at-all-0000' });

    expect(noReason.code).toBe(1);
    expect(noReason.stderr).toMatch(/VALIDATION/);
    expect(viewer.code).toBe(3);
    expect(viewer.stderr).toMatch(/FORBIDDEN/);
    expect(wrongKey.code).toBe(3);
    expect(wrongKey.stderr).toMatch(/UNAUTHENTICATED/);
    expect(await statusOf(row.id)).toBe('EXHAUSTED');
  });

  it('exits 4 when the service cannot be reached', async () => {
    const result = await cli(['list'], { LAZARUS_URL: 'http://127.0.0.1:1/graphql' });
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/UNAVAILABLE/);
  });

  it('lists redrives after a large requeue becomes one', async () => {
    await t.handle.pool.query(`insert into dead_letters (event_type, error_message, status) select 'bulk.x', 'e', 'EXHAUSTED' from generate_series(1, 5)`);
    const started = await cli(['requeue', '--type', 'bulk.x', '--rate', '50', '--yes']);
    const listed = await cli(['--json', 'redrives']);

    expect(started.code).toBe(0);
    expect(started.stdout).toMatch(/redrive \d+ RUNNING: 5 events/);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ total: 5, createdBy: 'ops' })]);
  });

  it('tails a plain SQL INSERT, one JSON object per line', async () => {
    const tail = spawnCli(['--json', 'tail', '--type', 'tail.me']);
    try {
      await untilSubscribed(service.url, 1);
      const { rows } = await t.handle.pool.query(`insert into dead_letters (event_type, error_message) values ('tail.me', 'from psql') returning id`);
      await insertDeadLetter(t.db, { eventType: 'not.me' });
      for (const deadline = Date.now() + 15_000; !tail.stdout().includes('\n'); ) {
        if (Date.now() > deadline) throw new Error('tail printed nothing');
        await new Promise((r) => setTimeout(r, 25));
      }
      const first = JSON.parse(tail.stdout().split('\n')[0]!);
      expect(first).toMatchObject({ isNew: true, deadLetterId: String(rows[0].id), deadLetter: { eventType: 'tail.me', error: { message: 'from psql' } } });
    } finally {
      tail.child.kill('SIGINT');
    }
    expect((await tail.done).code).toBe(0);
    expect(tail.stdout()).not.toContain('not.me');
  });
});
