// Fault 8: pool starvation, both ways. The API and the retry loop have separate pools
// (DATABASE_POOL_MAX vs RETRY_POOL_MAX). API statements that stall — here mutations stuck behind
// a lock on rate_limit_windows, a table only the API touches — exhaust the small API pool, yet
// deliveries go on; and deliveries hung on a slow receiver leave API queries answering.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { deliveriesById, expectExactAccounting, scaled, waitFor } from '../helpers/faults.ts';
import { setPolicy } from '../helpers/retry.ts';
import { postGraphQL, startService, type ServiceProcess } from '../helpers/serviceProcess.ts';
import { startSink, type Sink } from '../helpers/sink.ts';

const EVENTS = scaled(300, 100);
const API_POOL = 2;
const STALLED_MUTATIONS = 10;
const CONCURRENCY = 20;

const t = useTestDatabase();
let sink: Sink;
let service: ServiceProcess;

beforeAll(async () => {
  sink = await startSink();
  service = await startService({
    DATABASE_URL: t.url, DATABASE_POOL_MAX: String(API_POOL), DATABASE_POOL_ACQUIRE_TIMEOUT_MS: '1000',
    DATABASE_STATEMENT_TIMEOUT_MS: '60000', RATE_LIMIT_MUTATIONS_PER_MINUTE: '1000000',
    RETRY_POLL_INTERVAL_MS: '250', RETRY_CONCURRENCY: String(CONCURRENCY), RETRY_BATCH_SIZE: String(CONCURRENCY),
  });
});
afterAll(async () => {
  await service?.stop('SIGKILL');
  await sink.close();
});

async function insertEvents(n: number) {
  await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true, timeoutMs: 60_000 });
  await t.db.$executeRaw`insert into dead_letters (event_type) select 'order.placed' from generate_series(1, ${n}::int)`;
}
const succeeded = () => t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } });
const apiSessionsWaitingOnLocks = async () => (await t.db.$queryRaw<{ n: number }[]>`
  select count(*)::int as n from pg_stat_activity
   where datname = current_database() and application_name = 'lazarus-api' and wait_event_type = 'Lock'`)[0]!.n;

describe('separate pools for the API and the retry loop', () => {
  it('keeps delivering while stalled API statements hold every API connection', async () => {
    const blocker = new pg.Client({ connectionString: t.url });
    await blocker.connect();
    await blocker.query('begin; lock table rate_limit_windows in access exclusive mode');
    const mutation = `mutation { addDeadLetterNote(input: { id: "999999999", note: "stalled" }) { __typename } }`;
    const stalled = Array.from({ length: STALLED_MUTATIONS }, () => postGraphQL(service.url, mutation));
    await waitFor(async () => (await apiSessionsWaitingOnLocks()) === API_POOL, 10_000, 'API pool exhausted');

    const starvedRead = await postGraphQL(service.url, '{ deadLetters { totalCount } }');
    expect(starvedRead.status).toBe(503);
    expect(starvedRead.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');

    await insertEvents(EVENTS);
    await waitFor(async () => (await succeeded()) === EVENTS, 30_000, 'deliveries while the API is starved');
    expect(await apiSessionsWaitingOnLocks()).toBe(API_POOL);

    await blocker.query('rollback');
    await blocker.end();
    const answers = await Promise.all(stalled);
    // The two holding a connection finish; the rest gave up waiting for one, with a coded 503.
    const outcomes = answers.map((a) => a.body.data?.addDeadLetterNote?.__typename ?? `${a.status} ${a.body.errors?.[0]?.extensions?.code}`);
    expect(outcomes.filter((o) => o === 'DeadLetterNotFoundError').length).toBeGreaterThanOrEqual(API_POOL);
    expect(outcomes.filter((o) => o !== 'DeadLetterNotFoundError').every((o) => o === '503 SERVICE_UNAVAILABLE')).toBe(true);
    expect(deliveriesById(sink.requests).size).toBe(EVENTS);
    await expectExactAccounting(t.db, EVENTS, { SUCCEEDED: EVENTS });
  });

  it('keeps answering API queries while every delivery slot hangs on a slow receiver', async () => {
    sink.requests = [];
    sink.hold();
    await insertEvents(EVENTS);
    await waitFor(() => sink.heldCount === CONCURRENCY, 10_000, 'delivery slots hung');

    const reads = await Promise.all(Array.from({ length: 20 }, () => postGraphQL(service.url, '{ deadLetters(filter: { statuses: [PROCESSING] }) { totalCount } }')));
    expect(reads.map((r) => r.body)).toEqual(reads.map(() => ({ data: { deadLetters: { totalCount: CONCURRENCY } } })));
    expect(sink.heldCount).toBe(CONCURRENCY);

    sink.release();
    await waitFor(async () => (await succeeded()) === EVENTS, 30_000, 'deliveries after the receiver recovers');
    expect(deliveriesById(sink.requests).size).toBe(EVENTS);
    await expectExactAccounting(t.db, EVENTS, { SUCCEEDED: EVENTS });
  });
});
