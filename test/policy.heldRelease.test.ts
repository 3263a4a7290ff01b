// Issue 35 item 2: a policy save that lets held events go releases them as a ramped redrive (the
// default above the redrive threshold) or at once, as the caller chooses.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { startRedriveRunner } from '../src/workers/redriveRunner.ts';
import { startRetryLoop } from '../src/workers/retry/startRetryLoop.ts';
import { createWebhookDeliver } from '../src/workers/targets/webhook.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { silentLogger } from './helpers/retry.ts';
import { tablesDigest } from './helpers/writes.ts';

const t = useTestDatabase();
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

const THRESHOLD = 50;
const RATE = 300;
const server = (): GraphQLServer => testServer(t.db, { writeConfig: { allowedEventTypes: [], redriveThreshold: THRESHOLD, redriveRatePerSecond: RATE } });

const SAVE = `mutation ($input: UpsertRetryPolicyInput!) {
  upsertRetryPolicy(input: $input) { eventType heldRelease { count mode redriveId } }
}`;
const REDRIVE = `query ($id: ID!) { redrive(id: $id) {
  status total processed requeued skipped reason startRatePerSecond maxRatePerSecond rampSeconds outcomes { delivered pending failing }
} }`;
const COUNTS = '{ heldEventCounts { eventType reason count } }';

/** `n` PENDING events of `eventType`, due an hour ago: held while their policy has no target. */
async function insertHeld(eventType: string, n: number) {
  await t.handle.pool.query(
    `insert into dead_letters (event_type, payload, status, attempts, next_attempt_at, error_kind, error_message)
     select $1::text, jsonb_build_object('n', g), 'PENDING', 1, now() - interval '1 hour', 'DOWNSTREAM_API', 'HTTP 503'
       from generate_series(1, $2::int) g`, [eventType, n]);
}

async function dueNow(eventType: string): Promise<number> {
  const { rows: [row] } = await t.handle.pool.query<{ n: number }>(
    `select count(*)::int as n from dead_letter_states where event_type = $1 and status = 'PENDING' and next_attempt_at <= now()`, [eventType]);
  return row!.n;
}

/** A webhook receiver that counts deliveries per event id. */
async function startReceiver() {
  const delivered = new Map<string, number>();
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
      res.writeHead(200).end('ok');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  stops.push(async () => {
    receiver.closeAllConnections();
    receiver.close();
    await once(receiver, 'close');
  });
  return { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, delivered };
}

const target = (url: string) => ({ kind: 'webhook', settings: { url } });

describe('releasing held events on a policy save', () => {
  it('above the threshold releases them as a ramped redrive by default: none due at once, all delivered once through the redrive', async () => {
    const EVENTS = 150;
    await insertHeld('ship', EVENTS);
    const receiver = await startReceiver();
    const s = server();

    const saved = await execute<any>(s, SAVE, { input: { eventType: 'ship', target: target(receiver.url), allowPrivateTarget: true } });
    expect(saved.body.errors).toBeUndefined();
    const release = saved.body.data.upsertRetryPolicy.heldRelease;
    expect(release).toMatchObject({ count: EVENTS, mode: 'RAMPED' });
    const id = release.redriveId as string;

    // Committed with the policy: a redrive over exactly those events, and none of them due.
    expect(await dueNow('ship')).toBe(0);
    expect((await execute<any>(s, REDRIVE, { id })).body.data.redrive).toMatchObject({
      status: 'RUNNING', total: EVENTS, processed: 0, reason: 'held events released by saving the ship policy',
      startRatePerSecond: RATE / 10, maxRatePerSecond: RATE, rampSeconds: 60,
    });
    expect((await execute<any>(s, COUNTS)).body.data.heldEventCounts).toEqual([{ eventType: 'ship', reason: 'RELEASING', count: EVENTS }]);
    const { rows: [first] } = await t.handle.pool.query(`select min(id)::text as id from dead_letters`);
    const hold = await execute<any>(s, `query ($id: ID!) { deadLetter(id: $id) { status held { reason policyEventType } } }`, { id: first.id });
    expect(hold.body.data.deadLetter).toEqual({ status: 'PENDING', held: { reason: 'RELEASING', policyEventType: 'ship' } });

    // A retry loop alone delivers nothing: the events wait for the redrive.
    const loop = startRetryLoop({
      db: t.db, deliver: createWebhookDeliver(), logger: silentLogger, inProcessEventTypes: [],
      config: { workerId: 'w', batchSize: 100, concurrency: 20, leaseSeconds: 30, pollIntervalMs: 50, shutdownTimeoutMs: 5_000 },
    });
    stops.push(() => loop.stop());
    await once(loop.events, 'passCompleted');
    expect(receiver.delivered.size).toBe(0);

    // The redrive makes them due a batch at a time, at the ramp's rate. (Batches are collected by a
    // listener: awaiting between two `once` calls could miss one.)
    const runner = startRedriveRunner({ db: t.db, logger: silentLogger, owner: 'runner-a', pollIntervalMs: 50 });
    stops.push(() => runner.stop());
    const batches: { requeued: number; ratePerSecond: number }[] = [];
    await new Promise<void>((resolve) => runner.events.on('batch', (b) => {
      if (b.redriveId !== BigInt(id)) return;
      batches.push({ requeued: b.requeued, ratePerSecond: b.ratePerSecond });
      if (b.completed) resolve();
    }));
    expect(batches.every((b) => b.requeued <= Math.floor(b.ratePerSecond))).toBe(true);
    expect(batches.reduce((sum, b) => sum + b.requeued, 0)).toBe(EVENTS);
    // Each batch is one transaction: its requeues share a timestamp. Never all made due at once.
    const { rows: steps } = await t.handle.pool.query<{ n: number }>(
      `select count(*)::int as n from dead_letter_actions where redrive_id = $1::bigint and action = 'REQUEUED' group by created_at order by created_at`, [id]);
    expect(steps.length).toBeGreaterThan(2);
    // The ramp starts at a tenth of the rate (its clock runs from the save, so a little above that).
    expect(steps[0]!.n).toBeLessThan(RATE / 2);
    expect(Math.max(...steps.map((x) => x.n))).toBeLessThan(EVENTS);

    while ((await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) < EVENTS) await once(loop.events, 'passCompleted');
    expect(receiver.delivered.size).toBe(EVENTS);
    expect([...receiver.delivered.values()].every((n) => n === 1)).toBe(true);
    expect((await execute<any>(s, REDRIVE, { id })).body.data.redrive).toMatchObject({
      status: 'COMPLETED', processed: EVENTS, requeued: EVENTS, skipped: 0, outcomes: { delivered: EVENTS, pending: 0, failing: 0 },
    });
  }, 120_000);

  it('releases them at once when asked, even above the threshold, and by default up to it', async () => {
    await insertHeld('many', THRESHOLD + 10);
    await insertHeld('few', THRESHOLD);
    const s = server();
    const many = await execute<any>(s, SAVE, { input: { eventType: 'many', target: target('https://hooks.example.com/m'), release: 'AT_ONCE' } });
    expect(many.body.data.upsertRetryPolicy.heldRelease).toEqual({ count: THRESHOLD + 10, mode: 'AT_ONCE', redriveId: null });
    expect(await dueNow('many')).toBe(THRESHOLD + 10);
    const few = await execute<any>(s, SAVE, { input: { eventType: 'few', target: target('https://hooks.example.com/f') } });
    expect(few.body.data.upsertRetryPolicy.heldRelease).toEqual({ count: THRESHOLD, mode: 'AT_ONCE', redriveId: null });
    expect(await dueNow('few')).toBe(THRESHOLD);
    expect(await t.db.redrive.count()).toBe(0);
  });

  it('ramps a small release when asked, and a save that releases nothing says so', async () => {
    await insertHeld('small', 3);
    const s = server();
    const paused = await execute<any>(s, SAVE, { input: { eventType: 'small', paused: true, target: target('https://hooks.example.com/s'), release: 'RAMPED' } });
    expect(paused.body.data.upsertRetryPolicy.heldRelease).toBeNull();
    const resumed = await execute<any>(s, SAVE, { input: { eventType: 'small', paused: false, release: 'RAMPED' } });
    expect(resumed.body.data.upsertRetryPolicy.heldRelease).toMatchObject({ count: 3, mode: 'RAMPED' });
    expect(await dueNow('small')).toBe(0);
    const { rows } = await t.handle.pool.query(`select status::text, total from redrives`);
    expect(rows).toEqual([{ status: 'RUNNING', total: 3 }]);
  });

  it('rolls the policy back with the release when the release cannot start: the events stay held', async () => {
    await insertHeld('rolled', THRESHOLD + 1);
    const before = await tablesDigest(t.handle);
    // A redrive rate above what a redrive accepts fails the release after the policy was written.
    const broken = testServer(t.db, { writeConfig: { allowedEventTypes: [], redriveThreshold: THRESHOLD, redriveRatePerSecond: 1_000_000 } });
    const failed = await execute<any>(broken, SAVE, { input: { eventType: 'rolled', target: target('https://hooks.example.com/r') } });
    expect(failed.body.errors).toHaveLength(1);
    expect(await tablesDigest(t.handle)).toBe(before);
    expect(await t.db.retryPolicy.count({ where: { eventType: 'rolled' } })).toBe(0);
    expect((await execute<any>(server(), COUNTS)).body.data.heldEventCounts).toEqual([{ eventType: 'rolled', reason: 'NO_TARGET', count: THRESHOLD + 1 }]);
  });

  it('writes nothing, policy or redrive, when the save is refused', async () => {
    await insertHeld('bad', THRESHOLD + 1);
    const before = await tablesDigest(t.handle);
    const refused = await execute<any>(server(), SAVE, { input: { eventType: 'bad', target: target('https://hooks.example.com/b'), maxAttempts: 0 } });
    expect(refused.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'maxAttempts' });
    expect(await tablesDigest(t.handle)).toBe(before);
    expect(await t.db.retryPolicy.count({ where: { eventType: 'bad' } })).toBe(0);
    expect(await dueNow('bad')).toBe(THRESHOLD + 1);
  });
});
