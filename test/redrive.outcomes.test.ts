// What became of a redrive's events: a redrive into a half-failing local receiver with the retry
// loop running, read back through GraphQL as counts by outcome, error groups and event pages.
import { once } from 'node:events';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { foldErrorGroups } from '../src/db/sql/foldErrorGroups.ts';
import { nextBatch, startRedriveRunner, type RedriveRunner } from '../src/workers/redriveRunner.ts';
import { startRetryLoop, type RetryLoop } from '../src/workers/retry/startRetryLoop.ts';
import { createWebhookDeliver } from '../src/workers/targets/webhook.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute } from './helpers/graphql.ts';
import { setPolicy, silentLogger } from './helpers/retry.ts';
import { startSink, type Sink } from './helpers/sink.ts';
import { writeServer } from './helpers/writes.ts';

const t = useTestDatabase();
let server: GraphQLServer;
let receiver: Sink;
const stoppable: { stop(): Promise<void> }[] = [];
beforeAll(async () => {
  server = writeServer(t.handle, undefined, { allowedEventTypes: [], redriveThreshold: 5, redriveRatePerSecond: 5 });
  receiver = await startSink();
  // Half the events are refused: the receiver is down for them, for good.
  receiver.respond = (req, res) => void res.writeHead((req.json.payload as { ok: boolean }).ok ? 200 : 503).end();
});
afterAll(async () => {
  await receiver?.close();
});
afterEach(async () => {
  await Promise.all(stoppable.splice(0).map((s) => s.stop()));
});

const REQUEUE = `mutation ($input: RequeueDeadLettersInput!) {
  requeueDeadLetters(input: $input) { __typename ... on RequeueResult { redrive { id } } ... on MutationError { code message } }
}`;
const OUTCOMES = `query ($id: ID!) { redrive(id: $id) {
  status settled requeued
  outcomes { delivered failing exhausted resolved discarded pending deleted }
  errorGroups(first: 5) { count failing exhausted group { id signature } }
} }`;
const EVENTS = `query ($id: ID!, $outcome: RedriveOutcome, $after: String) { redrive(id: $id) {
  events(outcome: $outcome, first: 3, after: $after) { edges { node { id status } } pageInfo { hasNextPage endCursor } }
} }`;

const TIMEOUT = 'ledger timed out after 30s';
const REFUSED = 'ledger refused the connection';

async function query(text: string, variables: Record<string, unknown>): Promise<any> {
  const { body } = await execute(server, text, variables);
  expect(body.errors).toBeUndefined();
  return (body.data as any).redrive;
}

/** 6 that will be delivered, 4 refused with one attempt left (exhausted), 2 refused with many (failing). */
async function seed() {
  await setPolicy(t.db, 'ledger.sync', {
    targetUrl: receiver.url, allowPrivateTarget: true, maxAttempts: 10, backoff: 'FIXED', baseDelayMs: 3_600_000, maxDelayMs: 3_600_000,
  });
  const make = (n: number, o: { ok: boolean; error: string; maxAttempts?: number }) =>
    Promise.all(Array.from({ length: n }, () =>
      insertDeadLetter(t.db, { eventType: 'ledger.sync', status: 'EXHAUSTED', attempts: 10, nextAttemptAt: null, payload: { ok: o.ok }, errorMessage: o.error, maxAttempts: o.maxAttempts ?? null })));
  const delivered = await make(6, { ok: true, error: TIMEOUT });
  const exhausted = await make(4, { ok: false, error: REFUSED, maxAttempts: 1 });
  const failing = await make(2, { ok: false, error: TIMEOUT });
  await foldErrorGroups(t.db, 1_000);
  return { delivered, exhausted, failing };
}

/** Starts the redrive, runs it to COMPLETED, then retry passes until none of its events is untried. */
async function redriveAndDeliver(): Promise<string> {
  const started = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['ledger.sync'] }, ratePerSecond: 1_000, resetAttempts: true } });
  const id = (started.body.data as any).requeueDeadLetters.redrive.id as string;
  const runner: RedriveRunner = startRedriveRunner({ db: t.db, logger: silentLogger, owner: 'runner', pollIntervalMs: 20 });
  stoppable.push(runner);
  for (;;) if ((await nextBatch(runner, BigInt(id))).completed) break;
  const loop: RetryLoop = startRetryLoop({
    db: t.db, deliver: createWebhookDeliver(), logger: silentLogger, random: () => 0,
    config: { workerId: 'worker-a', batchSize: 20, concurrency: 4, leaseSeconds: 30, pollIntervalMs: 60_000, shutdownTimeoutMs: 5_000 },
  });
  stoppable.push(loop);
  while ((await query(OUTCOMES, { id })).outcomes.pending > 0) {
    const passed = once(loop.events, 'passCompleted');
    loop.poke();
    await passed;
  }
  return id;
}

describe('redrive outcomes', () => {
  it('counts what became of the requeued events, the error groups of its failures, and is settled only when every event ends', async () => {
    const seeded = await seed();
    const id = await redriveAndDeliver();

    const groupOf = async (deadLetterId: bigint) => (await t.db.deadLetter.findUniqueOrThrow({ where: { id: deadLetterId } })).errorGroupId!.toString();
    const refusedGroup = await groupOf(seeded.exhausted[0]!.id);
    const timeoutGroup = await groupOf(seeded.failing[0]!.id);
    expect(refusedGroup).not.toBe(timeoutGroup);
    expect(await query(OUTCOMES, { id })).toEqual({
      // The runner requeued everything: COMPLETED, but two events are still failing, so not settled.
      status: 'COMPLETED',
      settled: false,
      requeued: 12,
      outcomes: { delivered: 6, failing: 2, exhausted: 4, resolved: 0, discarded: 0, pending: 0, deleted: 0 },
      errorGroups: [
        { count: 4, failing: 0, exhausted: 4, group: { id: refusedGroup, signature: REFUSED } },
        { count: 2, failing: 2, exhausted: 0, group: { id: timeoutGroup, signature: 'ledger timed out after <n>s' } },
      ],
    });

    const exhaustedIds = seeded.exhausted.map((d) => d.id.toString()).sort((a, b) => Number(a) - Number(b));
    const first = (await query(EVENTS, { id, outcome: 'EXHAUSTED' })).events;
    expect(first.edges.map((e: any) => e.node)).toEqual(exhaustedIds.slice(0, 3).map((i) => ({ id: i, status: 'EXHAUSTED' })));
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = (await query(EVENTS, { id, outcome: 'EXHAUSTED', after: first.pageInfo.endCursor })).events;
    expect(second.edges.map((e: any) => e.node)).toEqual([{ id: exhaustedIds[3], status: 'EXHAUSTED' }]);
    expect(second.pageInfo.hasNextPage).toBe(false);
    const failingPage = (await query(EVENTS, { id, outcome: 'FAILING' })).events;
    expect(failingPage.edges.map((e: any) => e.node.status)).toEqual(['PENDING', 'PENDING']);

    // An operator closes the two that keep failing: every event has ended, so the redrive is done.
    const [resolveMe, discardMe] = seeded.failing.map((d) => d.id.toString());
    const close = (verb: string, ids: string[]) =>
      execute(server, `mutation ($input: ${verb[0]!.toUpperCase()}${verb.slice(1)}DeadLettersInput!) { ${verb}DeadLetters(input: $input) { __typename } }`, { input: { ids, reason: 'handled by hand' } });
    await close('resolve', [resolveMe!]);
    await close('discard', [discardMe!]);
    expect(await query(OUTCOMES, { id })).toMatchObject({
      status: 'COMPLETED',
      settled: true,
      outcomes: { delivered: 6, failing: 0, exhausted: 4, resolved: 1, discarded: 1, pending: 0, deleted: 0 },
      errorGroups: [{ count: 4, group: { id: refusedGroup } }],
    });
  });

  it('leaves out events it skipped and answers bad paging arguments as BAD_USER_INPUT', async () => {
    for (let i = 0; i < 6; i++) await insertDeadLetter(t.db, { eventType: 'ledger.sync', status: 'EXHAUSTED', attempts: 10, nextAttemptAt: null });
    const started = await execute(server, REQUEUE, { input: { filter: { eventTypes: ['ledger.sync'] }, ratePerSecond: 1_000 } });
    const id = (started.body.data as any).requeueDeadLetters.redrive.id as string;
    // Resolved before the runner reaches it: skipped, so not one of its outcomes.
    const skipped = await t.db.deadLetter.findFirstOrThrow({ where: { eventType: 'ledger.sync' }, orderBy: { id: 'desc' } });
    await t.db.deadLetter.update({ where: { id: skipped.id }, data: { status: 'RESOLVED', resolvedBy: 'ops', resolvedAt: new Date() } });
    const runner = startRedriveRunner({ db: t.db, logger: silentLogger, owner: 'runner', pollIntervalMs: 20 });
    stoppable.push(runner);
    for (;;) if ((await nextBatch(runner, BigInt(id))).completed) break;

    expect(await query(`query ($id: ID!) { redrive(id: $id) { requeued skipped settled outcomes { pending resolved } } }`, { id })).toEqual({
      requeued: 5, skipped: 1, settled: false, outcomes: { pending: 5, resolved: 0 },
    });
    const bad = async (text: string) => {
      const { body } = await execute(server, text, { id });
      return (body.errors as any[]).map((e) => [e.extensions.code, e.extensions.argument]);
    };
    expect(await bad(`query ($id: ID!) { redrive(id: $id) { errorGroups(first: 0) { count } } }`)).toEqual([['BAD_USER_INPUT', 'first']]);
    expect(await bad(`query ($id: ID!) { redrive(id: $id) { events(first: 501) { edges { cursor } } } }`)).toEqual([['BAD_USER_INPUT', 'first']]);
    expect(await bad(`query ($id: ID!) { redrive(id: $id) { events(after: "bm90IGEgY3Vyc29y") { edges { cursor } } } }`)).toEqual([['BAD_USER_INPUT', 'after']]);
  });
});
