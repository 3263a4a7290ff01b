// The `lazarus` command as a user runs it: a child process against the real service and database.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
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
  // 'close', not 'exit': 'exit' can come before the last of the child's output has been read.
  const done = new Promise<Run>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done, stdout: () => stdout };
}
const cli = (args: string[], env?: Record<string, string>) => spawnCli(args, env).done;
const statusOf = async (id: bigint) => (await t.handle.pool.query('select status from dead_letters_current where id = $1', [String(id)])).rows[0].status;

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

  it('prints a number a double cannot carry as stored', async () => {
    const { rows: [row] } = await t.handle.pool.query(`insert into dead_letters (event_type, payload) values ('order.placed', '{"id": 12345678901234567890}') returning id`);
    const shown = await cli(['--json', 'show', String(row.id)]);

    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('"id": 12345678901234567890');
  });

  it('shows each attempt with its failure kind, why it was the last, and the start of the receiver’s answer', async () => {
    const row = await insertDeadLetter(t.db, { status: 'EXHAUSTED' });
    await t.db.deliveryAttempt.create({
      data: {
        deadLetterId: row.id, attemptNumber: 1, workerId: 'w', durationMs: 24, outcome: 'PERMANENT_FAILURE', statusCode: 422, errorMessage: 'HTTP 422',
        failureKind: 'REJECTED', permanentReason: 'PERMANENT_STATUS_CODE', target: 'webhook to hooks.example.com',
        responseBody: '{"error":\n  "sku must be a string"}', responseBodyTruncated: false,
      },
    });

    const shown = await cli(['show', String(row.id)]);

    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/attempt 1 PERMANENT_FAILURE HTTP 422 REJECTED in 24 ms \(webhook to hooks\.example\.com\)\n {6}not retried: PERMANENT_STATUS_CODE\n {6}response: \{"error": "sku must be a string"\}\n/);
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
      await untilSubscribed(service.url, 1, undefined, { authorization: `Bearer ${VIEWER}` });
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

  it('prints a header row above the table, and leaves --json as it was', async () => {
    await insertDeadLetter(t.db, { eventType: 'header.me', status: 'EXHAUSTED' });
    const table = await cli(['list', '--type', 'header.me']);
    const json = await cli(['--json', 'list', '--type', 'header.me']);

    expect(table.code).toBe(0);
    const [header, row] = table.stdout.split('\n');
    expect(header).toMatch(/^\s+ID\s+STATUS\s+EVENT TYPE\s+QUEUE\s+ATTEMPTS\s+CREATED AT\s+ERROR$/);
    expect(row).toContain('header.me');
    expect(row!.indexOf('header.me')).toBe(header!.indexOf('EVENT TYPE'));
    expect(Object.keys(JSON.parse(json.stdout))).toEqual(['count', 'exact', 'rows']);
  });

  it('requeue --dry-run says what is not eligible and why, as the console does, and writes nothing', async () => {
    const eligible = await insertDeadLetter(t.db, { eventType: 'dry.run', status: 'EXHAUSTED' });
    await insertDeadLetter(t.db, { eventType: 'dry.run', status: 'PROCESSING', leaseOwner: 'w1', leaseToken: crypto.randomUUID(), leaseExpiresAt: new Date(Date.now() + 60_000) });
    await Promise.all([1, 2].map(() => insertDeadLetter(t.db, { eventType: 'dry.run', status: 'RESOLVED', resolvedBy: 'ops', nextAttemptAt: null })));

    const text = await cli(['requeue', '--type', 'dry.run', '--dry-run']);
    const json = await cli(['--json', 'requeue', '--type', 'dry.run', '--dry-run']);
    const forced = await cli(['--json', 'requeue', '--type', 'dry.run', '--dry-run', '--force']);

    expect(text.code).toBe(0);
    expect(text.stdout.trim().split('\n')).toEqual([
      `would requeue 1 dead letter: ${eligible.id}`,
      '2 RESOLVED not eligible: already finished (add --force to requeue it)',
      '1 PROCESSING not eligible: being delivered now',
    ]);
    expect(JSON.parse(json.stdout)).toMatchObject({ count: 1, dryRun: true, notEligible: [{ status: 'RESOLVED', count: 2 }, { status: 'PROCESSING', count: 1 }] });
    expect(JSON.parse(forced.stdout)).toMatchObject({ count: 3, notEligible: [{ status: 'PROCESSING', count: 1, why: 'being delivered now' }] });
    expect(await statusOf(eligible.id)).toBe('EXHAUSTED');
  });

  it('refuses an unknown --status or --kind with exit 2 and the known values, before sending anything', async () => {
    const unreachable = { LAZARUS_URL: 'http://127.0.0.1:1/graphql' };
    const status = await cli(['list', '--status', 'exhausted,nope'], unreachable);
    const kind = await cli(['requeue', '--kind', 'Timeout,Bogus', '--dry-run'], unreachable);
    const redrives = await cli(['redrives', '--status', 'stuck'], unreachable);
    const mixedCase = await cli(['--json', 'list', '--status', 'Exhausted', '--kind', 'downstream_API']);

    expect(status.code).toBe(2);
    expect(status.stderr).toBe("lazarus: unknown status 'nope'; one of PENDING, PROCESSING, SUCCEEDED, EXHAUSTED, RESOLVED, DISCARDED\n");
    expect(kind.code).toBe(2);
    expect(kind.stderr).toBe("lazarus: unknown kind 'Bogus'; one of DOWNSTREAM_API, TIMEOUT, VALIDATION, SCHEMA_MISMATCH, CRASH, UNKNOWN\n");
    expect(redrives.code).toBe(2);
    expect(redrives.stderr).toMatch(/^lazarus: unknown status 'stuck'; one of .*RUNNING/);
    expect(mixedCase.code).toBe(0);
  });

  it('refuses an unparsable --url with exit 2 and one line', async () => {
    const garbage = await cli(['list'], { LAZARUS_URL: 'not a url' });
    const flag = await cli(['--url', 'ftp://127.0.0.1/graphql', 'tail']);

    expect(garbage.code).toBe(2);
    expect(garbage.stderr).toBe("lazarus: --url 'not a url' is not a URL (e.g. http://127.0.0.1:4000/graphql)\n");
    expect(flag.code).toBe(2);
    expect(flag.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('tail exits 4 when its first connection cannot be made', async () => {
    const tail = spawnCli(['tail'], { LAZARUS_URL: 'http://127.0.0.1:1/graphql' });
    onTestFinished(() => void tail.child.kill());
    const result = await tail.done;
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/UNAVAILABLE: cannot connect to ws:\/\/127\.0\.0\.1:1\/graphql \(3 attempts/);
  });

  it('runs under a Node that cannot strip types by handing over to the project’s Node 24', async () => {
    const child = spawn(process.execPath, ['--no-experimental-strip-types', BIN, '--json', 'list', '--type', 'none.such'], {
      env: { ...process.env, LAZARUS_URL: `${service.url}/graphql`, LAZARUS_API_KEY: OPERATOR },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const [code] = await once(child, 'exit');

    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(stdout)).toEqual({ count: 0, exact: true, rows: [] });
  });

  it('requeue --to-source: a dry run says how many have no source, and the requeue is refused while any has none', async () => {
    const a = await insertDeadLetter(t.db, { eventType: 'to.source', status: 'EXHAUSTED' });
    await insertDeadLetter(t.db, { eventType: 'to.source', status: 'EXHAUSTED', origin: { kind: 'amqp', bridge: 'undeclared', vhost: '/', queue: 'orders', exchange: '', routingKeys: [] } });
    const dry = await cli(['requeue', '--type', 'to.source', '--to-source', '--dry-run']);
    expect(dry.stdout).toMatch(/would requeue 2 dead letters to source.*\n2 of them have no source/);
    const refused = await cli(['requeue', '--ids', String(a.id), '--to-source', '--yes']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/VALIDATION.*cannot be redriven to source/);
    expect(await statusOf(a.id)).toBe('EXHAUSTED');
  });
});
