// Delivering alerts: signed like deliveries (verified here with the standardwebhooks package),
// STANDARD and SLACK bodies, retried with backoff until delivered, an outbox that outlives its
// deliverer, and the SSRF check again at delivery.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { sendTestAlert } from '../src/domain/alertRules.ts';
import { raiseAlert } from '../src/domain/alerts.ts';
import type { AlertFormat } from '../src/generated/prisma/enums.ts';
import { createChangeListener, type ChangeListener } from '../src/live/changeListener.ts';
import { wakeOnAlerts } from '../src/workers/jobs.ts';
import { startAlertDelivery, type AlertDelivery, type AlertDeliveryDeps, type AlertFinished } from '../src/workers/retry/alertDelivery.ts';
import { useTestDatabase } from './helpers/db.ts';
import { silentLogger } from './helpers/retry.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();
const SECRET = `whsec_${Buffer.from('alert-signing-key-0123456789').toString('base64')}`;
let sink: Sink;
let answerAsSinkDoes: Sink['respond'];
const running: AlertDelivery[] = [];

beforeAll(async () => {
  sink = await startSink();
  answerAsSinkDoes = sink.respond;
});
afterAll(() => sink.close());
beforeEach(() => {
  sink.requests = [];
  sink.respond = answerAsSinkDoes;
});
const listeners: ChangeListener[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await Promise.all(listeners.splice(0).map((l) => l.stop()));
});

function deliverer(overrides: Partial<AlertDeliveryDeps> = {}): AlertDelivery {
  // A fixed 20 ms backoff keeps retries quick; the poll interval is long, so only pokes and NOTIFY move it.
  const d = startAlertDelivery({ db: t.db, logger: silentLogger, pollIntervalMs: 60_000, backoff: { backoff: 'FIXED', baseDelayMs: 20, maxDelayMs: 20 }, ...overrides });
  running.push(d);
  return d;
}

/**
 * A deliverer woken as the service wakes it (jobs.ts wakeOnAlerts), on a LISTEN connection of its
 * own, once its first pass is done; `seen` counts its wake-ups and its later passes.
 */
async function listeningDeliverer() {
  const listener = createChangeListener({ url: t.url, logger: silentLogger });
  listeners.push(listener);
  await listener.start();
  const seen = { wakes: 0, passes: 0 };
  const d = deliverer({ wake: (fn) => wakeOnAlerts(listener, () => ((seen.wakes += 1), fn())) });
  await new Promise<void>((resolve) => d.events.once('passCompleted', () => resolve()));
  d.events.on('passCompleted', () => void (seen.passes += 1));
  return { listener, d, seen };
}

/** `promise`, or a failure saying `why()` once `ms` have passed without it. */
async function within<T>(promise: Promise<T>, ms: number, why: () => string): Promise<T> {
  let guard: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => {
      guard = setTimeout(() => reject(new Error(why())), ms);
    })]);
  } finally {
    clearTimeout(guard);
  }
}

/**
 * Resolves with the first recorded outcome of alert `id` (of any alert, without one) that is final
 * (DELIVERED or FAILED). Call it before the alert can be delivered: an outcome recorded before
 * it listens is not seen.
 */
function untilFinal(d: AlertDelivery, id?: bigint): Promise<AlertFinished> {
  return new Promise((resolve) => {
    const onFinished = (f: AlertFinished) => {
      if ((id !== undefined && f.id !== id) || f.outcome.kind === 'RETRY') return;
      d.events.off('finished', onFinished);
      resolve(f);
    };
    d.events.on('finished', onFinished);
  });
}

async function ruleAndAlert(options: { format?: AlertFormat; targetUrl?: string; allowPrivateTarget?: boolean; summary?: string } = {}) {
  const rule = await t.db.alertRule.create({
    data: {
      name: 'regressions', trigger: 'REGRESSION', targetUrl: options.targetUrl ?? sink.url, signingSecret: SECRET,
      allowPrivateTarget: options.allowPrivateTarget ?? true, format: options.format ?? 'STANDARD',
    },
  });
  const [id] = await raiseAlert(t.db, { trigger: 'REGRESSION', subjectId: 42, summary: options.summary ?? 'group 42 failed again', details: { groupId: '42' } });
  return { rule, id: id! };
}

describe('delivering an alert', () => {
  it('posts the alert signed with the rule’s secret, verifiable by the Standard Webhooks library, and records it DELIVERED', async () => {
    const { rule, id } = await ruleAndAlert();
    const d = deliverer();
    const done = untilFinal(d, id);
    d.poke();

    expect((await done).outcome).toEqual({ kind: 'DELIVERED', statusCode: 200 });
    expect(sink.requests).toHaveLength(1);
    const request = sink.requests[0]!;
    const verified = new Webhook(SECRET).verify(request.body, request.headers as Record<string, string>);
    expect(verified).toMatchObject({
      id: `alert_${id}`, type: 'lazarus.alert', trigger: 'REGRESSION', subject: 'group:42', summary: 'group 42 failed again',
      details: { groupId: '42' }, rule: { id: rule.id.toString(), name: 'regressions' }, attempt: 1,
    });
    expect(request.headers['webhook-id']).toBe(`alert_${id}`);
    expect(() => new Webhook(`whsec_${Buffer.from('some-other-key-0123456789').toString('base64')}`)
      .verify(request.body, request.headers as Record<string, string>)).toThrow();
    expect(await t.db.alert.findUniqueOrThrow({ where: { id } })).toMatchObject({
      deliveryStatus: 'DELIVERED', attempts: 1, lastError: null, lastStatusCode: 200, leaseOwner: null,
    });
  });

  it('posts a Slack-compatible { text } body, also signed, for a SLACK rule', async () => {
    const { id } = await ruleAndAlert({ format: 'SLACK', summary: 'group 42 failed again: <b>&</b>' });
    const d = deliverer();
    const done = untilFinal(d, id);
    d.poke();
    await done;

    const request = sink.requests[0]!;
    expect(JSON.parse(request.body)).toEqual({ text: ':rotating_light: *REGRESSION* group 42 failed again: &lt;b&gt;&amp;&lt;/b&gt; (rule "regressions", group:42)' });
    expect(new Webhook(SECRET).verify(request.body, request.headers as Record<string, string>)).toBeTruthy();
  });

  it('is woken by the raise’s NOTIFY at commit, without polling', async () => {
    await t.db.alertRule.create({ data: { name: 'new', trigger: 'NEW_GROUP', targetUrl: sink.url, signingSecret: SECRET, allowPrivateTarget: true } });
    const { listener, d, seen } = await listeningDeliverer();
    // Listening before the raise: woken by its NOTIFY, the deliverer may finish before the raise's
    // own answer has reached this test.
    const finished = untilFinal(d);
    const [id] = await raiseAlert(t.db, { trigger: 'NEW_GROUP', subjectId: 7, summary: 'a new group' });
    // The poll interval is a minute: only the NOTIFY can bring this delivery about in the test's time.
    expect(await within(finished, 30_000, () => `no outcome 30 s after the raise: ${seen.wakes} wake-ups, ${seen.passes} passes, ` +
      `${listener.reconnects()} LISTEN reconnects, connected ${listener.isConnected()}`)).toMatchObject({ id, outcome: { kind: 'DELIVERED' } });
  });

  it('is woken when its LISTEN connection comes back, for an alert whose NOTIFY it missed', async () => {
    const rule = await t.db.alertRule.create({ data: { name: 'new', trigger: 'NEW_GROUP', targetUrl: sink.url, signingSecret: SECRET, allowPrivateTarget: true } });
    const { listener, d } = await listeningDeliverer();
    const finished = untilFinal(d);
    // Written without lazarus_raise_alert, so without a NOTIFY: as if it came while LISTEN was down.
    const { id } = await t.db.alert.create({ data: { ruleId: rule.id, ruleName: rule.name, trigger: 'NEW_GROUP', subject: 'group:9', summary: 'missed' } });
    listener.reconnect('test');
    expect(await within(finished, 30_000, () => 'not delivered 30 s after the LISTEN connection came back (the poll interval is a minute)'))
      .toMatchObject({ id, outcome: { kind: 'DELIVERED' } });
    expect(listener.reconnects()).toBe(1);
  });

  it('delivers a test alert of a disabled, throttled rule at once, woken by its NOTIFY, and leaves the throttle alone', async () => {
    const rule = await t.db.alertRule.create({
      data: { name: 'new', trigger: 'NEW_GROUP', enabled: false, targetUrl: sink.url, signingSecret: SECRET, allowPrivateTarget: true },
    });
    await t.db.alertThrottle.create({ data: { ruleId: rule.id, subject: 'test', lastRaisedAt: new Date() } });
    const { d } = await listeningDeliverer();
    const finished = untilFinal(d);
    const id = await sendTestAlert(t.db, rule.id, 'admin-alice');
    expect(await finished).toMatchObject({ id, outcome: { kind: 'DELIVERED' } });

    expect(new Webhook(SECRET).verify(sink.requests[0]!.body, sink.requests[0]!.headers as Record<string, string>)).toMatchObject({
      trigger: 'NEW_GROUP', subject: 'test', summary: "Test alert sent by admin-alice: checking this rule's target",
      details: { test: true, sentBy: 'admin-alice' }, rule: { id: rule.id.toString(), name: 'new' },
    });
    expect(await t.db.alertThrottle.count()).toBe(1);
  });

  it('retries a failing receiver with backoff, under the same webhook-id, until it is delivered', async () => {
    let answered = 0;
    sink.respond = (_req, res) => void res.writeHead(++answered <= 2 ? 500 : 200).end();
    const { id } = await ruleAndAlert();
    const outcomes: string[] = [];
    const d = deliverer();
    d.events.on('finished', (f: AlertFinished) => outcomes.push(f.outcome.kind));
    const done = untilFinal(d, id);
    d.poke();

    expect((await done).outcome.kind).toBe('DELIVERED');
    expect(outcomes).toEqual(['RETRY', 'RETRY', 'DELIVERED']);
    expect(sink.requests.map((r) => [r.headers['webhook-id'], r.json.attempt])).toEqual([[`alert_${id}`, 1], [`alert_${id}`, 2], [`alert_${id}`, 3]]);
    expect(await t.db.alert.findUniqueOrThrow({ where: { id } })).toMatchObject({ deliveryStatus: 'DELIVERED', attempts: 3, lastError: null });
  });

  it('records the last error while it waits for the next attempt', async () => {
    sink.respond = (_req, res) => void res.writeHead(503).end('down');
    const { id } = await ruleAndAlert();
    const d = deliverer({ backoff: { backoff: 'FIXED', baseDelayMs: 3_600_000, maxDelayMs: 3_600_000 } });
    const retried = new Promise<void>((resolve) => d.events.on('finished', (f: AlertFinished) => f.id === id && resolve()));
    d.poke();
    await retried;

    const row = await t.db.alert.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ deliveryStatus: 'PENDING', attempts: 1, lastError: 'HTTP 503', lastStatusCode: 503 });
    expect(row.nextAttemptAt.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
  });

  it('gives up after maxAttempts, and at once on a permanent answer', async () => {
    sink.respond = (req, res) => void res.writeHead(req.json.attempt === undefined ? 410 : 500).end();
    const { id } = await ruleAndAlert();
    const d = deliverer({ maxAttempts: 2 });
    const done = untilFinal(d, id);
    d.poke();
    expect((await done).outcome).toEqual({ kind: 'FAILED', error: 'HTTP 500', statusCode: 500 });
    expect(sink.requests).toHaveLength(2);

    const [slackId] = await t.db.$transaction(async (tx) => {
      await tx.alertRule.create({ data: { name: 'slack', trigger: 'NEW_GROUP', format: 'SLACK', targetUrl: sink.url, signingSecret: SECRET, allowPrivateTarget: true } });
      return raiseAlert(tx, { trigger: 'NEW_GROUP', subjectId: 1, summary: 'x' });
    });
    const permanent = untilFinal(d, slackId!);
    d.poke();
    expect((await permanent).outcome).toEqual({ kind: 'FAILED', error: 'HTTP 410', statusCode: 410 });
    expect(await t.db.alert.findUniqueOrThrow({ where: { id: slackId! } })).toMatchObject({ deliveryStatus: 'FAILED', attempts: 1 });
  });
});

describe('the outbox', () => {
  it('keeps alerts raised while no deliverer runs, and a crashed deliverer’s alert, until a deliverer takes them', async () => {
    const { id: waiting } = await ruleAndAlert();
    const [crashed] = await raiseAlert(t.db, { trigger: 'REGRESSION', subjectId: 43, summary: 'group 43 failed again' });
    // A deliverer claimed it and died: its lease has run out.
    await t.db.alert.update({
      where: { id: crashed! },
      data: { deliveryStatus: 'DELIVERING', attempts: 1, leaseOwner: 'dead-process', leaseExpiresAt: new Date(Date.now() - 1_000) },
    });

    const d = deliverer();
    const done = Promise.all([untilFinal(d, waiting), untilFinal(d, crashed!)]);
    d.poke();
    await done;

    expect((await t.db.alert.findMany({ orderBy: { id: 'asc' } })).map((a) => [a.deliveryStatus, a.attempts])).toEqual([['DELIVERED', 1], ['DELIVERED', 2]]);
    expect(sink.requests.map((r) => r.json.attempt).sort()).toEqual([1, 2]);
  });

  it('never hands one alert to two deliverers at once', async () => {
    sink.hold();
    const { id } = await ruleAndAlert();
    const [a, b] = [deliverer(), deliverer()];
    const done = Promise.race([untilFinal(a, id), untilFinal(b, id)]);
    await new Promise<void>((resolve) => sink.events.once('request', () => resolve()));
    // One of them holds it (its POST waits for an answer, so its pass cannot end): the other's next
    // pass is the first to end, and it claims nothing.
    const nextPass = Promise.race([a, b].map((d) => new Promise<{ claimed: number }>((resolve) => d.events.once('passCompleted', resolve))));
    a.poke();
    b.poke();

    expect(await nextPass).toEqual({ claimed: 0 });
    expect(await t.db.alert.findUniqueOrThrow({ where: { id } })).toMatchObject({ deliveryStatus: 'DELIVERING', attempts: 1 });
    sink.release(200);
    expect((await done).outcome.kind).toBe('DELIVERED');
    expect(sink.requests).toHaveLength(1);
  });

  it('lets a delivery in flight finish when stopped, so the receiver is not sent it twice', async () => {
    sink.hold();
    const { id } = await ruleAndAlert();
    const d = deliverer();
    const done = untilFinal(d, id);
    await new Promise<void>((resolve) => sink.events.once('request', () => resolve()));

    const stopped = d.stop();
    sink.release(200);
    await stopped;

    expect((await done).outcome.kind).toBe('DELIVERED');
    expect(await t.db.alert.findUniqueOrThrow({ where: { id } })).toMatchObject({ deliveryStatus: 'DELIVERED', attempts: 1 });
  });

  it('refuses, at delivery, a private target saved without allowPrivateTarget (e.g. written by SQL)', async () => {
    const { id } = await ruleAndAlert({ allowPrivateTarget: false });
    const d = deliverer();
    const done = untilFinal(d, id);
    d.poke();

    const { outcome } = await done;
    expect(outcome.kind).toBe('FAILED');
    expect(outcome.kind === 'FAILED' && outcome.error).toMatch(/private/);
    expect(sink.requests).toHaveLength(0);
  });

  it('ends an alert of a deleted rule FAILED, keeping it in the history under the rule’s name', async () => {
    const { rule, id } = await ruleAndAlert();
    await t.db.alertRule.delete({ where: { id: rule.id } });
    const d = deliverer();
    const done = untilFinal(d, id);
    d.poke();

    expect((await done).outcome).toEqual({ kind: 'FAILED', error: 'the alert rule was deleted', statusCode: null });
    expect(await t.db.alert.findUniqueOrThrow({ where: { id } })).toMatchObject({ ruleId: null, ruleName: 'regressions', deliveryStatus: 'FAILED' });
  });
});
