// The bar of issue 19 item 4: a ramped redrive against a local receiver that starts failing
// half-way pauses itself within one window, resumes once the receiver recovers, and ends with every
// event delivered exactly once. LAZARUS_RAMP_EVENTS sets the size (20,000 in `npm run
// test:redrive:ramp`; smaller in the normal suite so it stays quick on a 2-core machine).
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { startRedriveRunner, type RedriveRunner } from '../src/workers/redriveRunner.ts';
import { startRetryLoop, type RetryLoop } from '../src/workers/retry/startRetryLoop.ts';
import { createWebhookDeliver } from '../src/workers/targets/webhook.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';
import { setPolicy, silentLogger } from './helpers/retry.ts';
import { writeServer } from './helpers/writes.ts';

const EVENTS = Number(process.env.LAZARUS_RAMP_EVENTS ?? 4_000);
const WINDOW = 500;
const GUARD = 0.5;
const LIMITS = { startRatePerSecond: 200, maxRatePerSecond: 2_000, rampSeconds: 10, pauseWhenFailureRateAbove: GUARD, windowSize: WINDOW };

const t = useTestDatabase();
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** A webhook receiver that answers 200 until `failAfter` events were delivered, then 500 until healed. */
async function startReceiver(failAfter: number) {
  const delivered = new Map<string, number>();
  const state = { failing: false, healed: false, refused: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
      if (!state.healed && delivered.size >= failAfter) state.failing = true;
      if (state.failing && !state.healed) {
        state.refused += 1;
        res.writeHead(500).end('down');
        return;
      }
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
      res.writeHead(200).end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  stops.push(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, delivered, state };
}

const REQUEUE = `mutation ($input: RequeueDeadLettersInput!) {
  requeueDeadLetters(input: $input) { __typename ... on RequeueResult { count redrive { id status startRatePerSecond maxRatePerSecond rampSeconds } } ... on MutationError { code message } }
}`;
const REDRIVE = `query ($id: ID!) { redrive(id: $id) {
  status processed requeued skipped pausedBy pausedReason maxRatePerSecond currentRatePerSecond guardWindow { outcomes failures }
  history { action actor reason after }
} }`;
const RESUME = `mutation ($id: ID!, $limits: RedriveLimitsInput) {
  resumeRedrive(id: $id, limits: $limits, reason: "receiver is back") { __typename ... on Redrive { status maxRatePerSecond pausedBy } ... on MutationError { code message } }
}`;

describe('a ramped redrive with a failure guard', () => {
  it(`pauses itself within one window when the receiver starts failing half-way, and after a resume delivers all ${EVENTS} events exactly once`, async () => {
    const receiver = await startReceiver(EVENTS / 2);
    await setPolicy(t.db, 'ramp', { targetUrl: receiver.url, allowPrivateTarget: true, maxAttempts: 1_000, backoff: 'FIXED', baseDelayMs: 300, maxDelayMs: 300, timeoutMs: 5_000 });
    await t.handle.pool.query(
      `insert into dead_letters (event_type, payload, status, attempts, next_attempt_at, error_kind, error_message)
       select 'ramp', jsonb_build_object('n', g), 'EXHAUSTED', 10, null, 'DOWNSTREAM_API', 'HTTP 503 from ledger'
         from generate_series(1, $1::int) g`,
      [EVENTS],
    );
    const server: GraphQLServer = writeServer(t.handle, undefined, { allowedEventTypes: [], redriveThreshold: 1_000, redriveRatePerSecond: 100 });
    await t.handle.pool.query(`insert into alert_rules (name, "trigger", target_url, signing_secret) values ('guard', 'REDRIVE_PAUSED', 'https://alerts.example.com/hook', 'whsec_0123456789abcdef')`);

    const loop: RetryLoop = startRetryLoop({
      db: t.db, deliver: createWebhookDeliver(), logger: silentLogger, inProcessEventTypes: [],
      config: { workerId: 'w', batchSize: 100, concurrency: 50, leaseSeconds: 30, pollIntervalMs: 50, shutdownTimeoutMs: 5_000 },
    });
    stops.push(() => loop.stop());
    const runner: RedriveRunner = startRedriveRunner({ db: t.db, logger: silentLogger, owner: 'runner-a', pollIntervalMs: 50 });
    stops.push(() => runner.stop());
    const rates: number[] = [];
    runner.events.on('batch', (b) => rates.push(b.ratePerSecond));
    const guardPaused = once(runner.events, 'guardPaused');

    const started = (await execute(server, REQUEUE, { input: { filter: { eventTypes: ['ramp'] }, resetAttempts: true, reason: 'ledger fixed', redriveLimits: LIMITS } })).body.data as any;
    expect(started.requeueDeadLetters).toMatchObject({ count: EVENTS, redrive: { status: 'RUNNING', startRatePerSecond: 200, maxRatePerSecond: 2_000, rampSeconds: 10 } });
    const id = started.requeueDeadLetters.redrive.id as string;

    // 1. The receiver fails from half-way on; the guard pauses the redrive.
    const [{ reason }] = await guardPaused;
    expect(receiver.state.failing).toBe(true);
    const paused = (await execute(server, REDRIVE, { id })).body.data as any;
    expect(paused.redrive).toMatchObject({ status: 'PAUSED', pausedBy: 'GUARD', pausedReason: reason, currentRatePerSecond: null });
    expect(reason).toMatch(/^failure rate (0\.\d+|1\.000) \(\d+ of the last 500 deliveries\) is above 0\.5$/);
    const pause = paused.redrive.history.at(-1);
    expect(pause).toMatchObject({ action: 'PAUSED', actor: 'redrive-guard', reason, after: { status: 'PAUSED', window: { outcomes: WINDOW } } });
    // The pause raised the REDRIVE_PAUSED rule's alert, once, for this redrive.
    const { rows: alerts } = await t.handle.pool.query(`select "trigger"::text, subject, summary from alerts`);
    expect(alerts).toEqual([{ trigger: 'REDRIVE_PAUSED', subject: `redrive:${id}`, summary: `Redrive ${id} paused itself: ${reason}` }]);
    // The ramp rose from below its maximum and never went down.
    expect(rates[0]).toBeLessThan(2_000);
    expect(rates).toEqual([...rates].sort((a, b) => a - b));
    expect(rates.every((r) => r >= 200 && r <= 2_000)).toBe(true);

    // The guard tripped on more than half a window of failures, and the failing target saw at most
    // one window of the redrive's events: the redrive keeps no more than that awaiting delivery, so
    // however late the guard looked (retries of those events fail meanwhile too), no further event
    // was sent to the failing target.
    const lastSeen = String(pause.after.window.lastAttemptId);
    const { rows: [seen] } = await t.handle.pool.query<{ failures: number; failedEvents: number }>(
      `select count(*) filter (where id <= $1::bigint)::int as failures, count(distinct dead_letter_id)::int as "failedEvents"
         from delivery_attempts where outcome <> 'SUCCEEDED'`, [lastSeen]);
    expect(seen!.failures).toBeGreaterThan(WINDOW * GUARD);
    expect(seen!.failedEvents).toBeLessThanOrEqual(WINDOW);

    // Events the redrive has not reached are untouched: no requeue, no attempt charged.
    const at = await t.db.redrive.findUniqueOrThrow({ where: { id: BigInt(id) } });
    expect(at.processed).toBeLessThan(EVENTS);
    const { rows: [held] } = await t.handle.pool.query<{ n: number; untouched: number; tried: number }>(
      `select count(*)::int as n,
              count(*) filter (where d.status = 'EXHAUSTED' and d.attempts = 10)::int as untouched,
              (select count(*)::int from delivery_attempts a join redrive_items j on j.dead_letter_id = a.dead_letter_id
                where j.redrive_id = $1::bigint and j.dead_letter_id > $2::bigint) as tried
         from redrive_items i join dead_letters_current d on d.id = i.dead_letter_id
        where i.redrive_id = $1::bigint and i.dead_letter_id > $2::bigint`, [id, at.lastId.toString()]);
    expect(held).toEqual({ n: EVENTS - at.processed, untouched: EVENTS - at.processed, tried: 0 });

    // 2. The receiver recovers; the operator resumes with a new maximum. The ramp starts over.
    receiver.state.healed = true;
    const resumed = (await execute(server, RESUME, { id, limits: { maxRatePerSecond: 3_000 } })).body.data as any;
    expect(resumed.resumeRedrive).toEqual({ __typename: 'Redrive', status: 'RUNNING', maxRatePerSecond: 3_000, pausedBy: null });
    const ratesBeforeResume = rates.length;
    for (;;) {
      const [batch] = await once(runner.events, 'batch');
      if (batch.completed) break;
    }
    // The ramp starts over from its start rate, below the new maximum.
    expect(rates[ratesBeforeResume]).toBeLessThan(3_000);
    while ((await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) < EVENTS) await once(loop.events, 'passCompleted');

    // 3. Every event delivered exactly once; nothing missing, nothing requeued twice.
    const ids = (await t.db.deadLetter.findMany({ select: { id: true } })).map((d) => d.id.toString());
    expect(ids).toHaveLength(EVENTS);
    expect(ids.filter((i) => receiver.delivered.get(i) !== 1)).toEqual([]);
    expect(receiver.delivered.size).toBe(EVENTS);
    const { rows: attempts } = await t.handle.pool.query<{ id: string; n: number }>(
      `select d.id::text, count(a.id) filter (where a.outcome = 'SUCCEEDED')::int as n
         from dead_letters_current d left join delivery_attempts a on a.dead_letter_id = d.id group by d.id having count(a.id) filter (where a.outcome = 'SUCCEEDED') <> 1`);
    expect(attempts).toEqual([]);
    const { rows: twice } = await t.handle.pool.query(
      `select dead_letter_id from dead_letter_actions where action = 'REQUEUED' and redrive_id = $1::bigint group by 1 having count(*) <> 1`, [id]);
    expect(twice).toEqual([]);
    expect(await t.db.deadLetterAction.count({ where: { action: 'REQUEUED', redriveId: BigInt(id) } })).toBe(EVENTS);

    const done = (await execute(server, REDRIVE, { id })).body.data as any;
    expect(done.redrive).toMatchObject({ status: 'COMPLETED', processed: EVENTS, requeued: EVENTS, skipped: 0, maxRatePerSecond: 3_000, pausedBy: null });
    expect(done.redrive.history.map((h: { action: string; actor: string }) => `${h.action} by ${h.actor}`)).toEqual([
      'STARTED by ops-alice', 'PAUSED by redrive-guard', 'RESUMED by ops-alice', 'COMPLETED by runner-a',
    ]);
    expect(done.redrive.history[2]).toMatchObject({ reason: 'receiver is back', after: { maxRatePerSecond: 3_000, startRatePerSecond: 200 } });
    console.info(`ramp bar: ${EVENTS} events; paused at ${at.processed} processed after ${seen!.failures} failed deliveries (window ${WINDOW}); receiver refused ${receiver.state.refused} requests in all`);
  }, 180_000);
});
