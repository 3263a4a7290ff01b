// Fault 1: `kill -9` of a service process with hundreds of webhook deliveries in flight. A new
// process takes over once the dead one's leases expire: every event ends SUCCEEDED, only the
// in-flight ones are delivered twice, always under the same webhook-id, and the time from the
// kill to the last in-flight event succeeding is the crash recovery time (lease + poll).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { deliveriesById, expectExactAccounting, scaled, waitFor } from '../helpers/faults.ts';
import { setPolicy } from '../helpers/retry.ts';
import { startService, type ServiceProcess } from '../helpers/serviceProcess.ts';
import { startSink, type Sink } from '../helpers/sink.ts';

const EVENTS = scaled(500, 150);
const IN_FLIGHT = scaled(200, 50);
const LEASE_SECONDS = 2;
const POLL_MS = 250;

const t = useTestDatabase();
let sink: Sink;
const services: ServiceProcess[] = [];

beforeAll(async () => {
  sink = await startSink();
});
afterAll(async () => {
  await Promise.all(services.map((s) => s.stop('SIGKILL')));
  await sink.close();
});

const retryEnv = (concurrency: number) => ({
  DATABASE_URL: t.url, RETRY_LEASE_SECONDS: String(LEASE_SECONDS), RETRY_POLL_INTERVAL_MS: String(POLL_MS),
  RETRY_BATCH_SIZE: String(concurrency), RETRY_CONCURRENCY: String(concurrency),
});
const succeededAmong = async (ids: readonly bigint[]) => t.db.deadLetter.count({ where: { status: 'SUCCEEDED', id: { in: [...ids] } } });

describe('kill -9 with deliveries in flight', () => {
  it('ends with every event SUCCEEDED, only the in-flight ones delivered twice and always under the same webhook-id', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true });
    await t.db.$executeRaw`insert into dead_letters (event_type, payload) select 'order.placed', jsonb_build_object('n', g) from generate_series(1, ${EVENTS}::int) g`;
    sink.hold();
    const victim = await startService(retryEnv(IN_FLIGHT));
    services.push(victim);
    await waitFor(() => sink.heldCount === IN_FLIGHT, 20_000, 'deliveries in flight');
    const inFlight = new Set(sink.requests.map((r) => r.json.id));
    expect(inFlight.size).toBe(IN_FLIGHT);

    victim.child.kill('SIGKILL');
    expect(await victim.exited).toBeNull();
    const killedAt = Date.now();
    const killedAtDb = (await t.db.$queryRaw<{ at: Date }[]>`select clock_timestamp() as at`)[0]!.at;
    sink.release();
    services.push(await startService(retryEnv(40)));
    const restartMs = Date.now() - killedAt;

    const inFlightIds = [...inFlight].map(BigInt);
    await waitFor(async () => (await succeededAmong(inFlightIds)) === IN_FLIGHT, 30_000, 'in-flight events recovered');
    const recoveryMs = Date.now() - killedAt;
    await waitFor(async () => (await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) === EVENTS, 30_000, 'all succeeded');
    // Takeover: from the kill to the claim that re-took the last expired lease (database clock).
    const takeoverMs = (await t.db.$queryRaw<{ ms: number }[]>`
      select (extract(epoch from max(started_at) - ${killedAtDb}::timestamptz) * 1000)::int as ms
        from delivery_attempts where outcome = 'LEASE_LOST'`)[0]!.ms;
    process.stdout.write(`kill -9 recovery (lease ${LEASE_SECONDS} s, poll ${POLL_MS} ms, ${EVENTS - IN_FLIGHT} other events due): `
      + `restart ${restartMs} ms, last expired lease re-claimed ${takeoverMs} ms after the kill, `
      + `all ${IN_FLIGHT} in-flight events SUCCEEDED ${recoveryMs} ms after the kill\n`);

    const seen = deliveriesById(sink.requests);
    expect(seen.size).toBe(EVENTS);
    const duplicated = [...seen].filter(([, n]) => n > 1);
    expect(duplicated.every(([id, n]) => inFlight.has(id) && n === 2)).toBe(true);
    expect(duplicated.length).toBe(IN_FLIGHT);
    await expectExactAccounting(t.db, EVENTS, { SUCCEEDED: EVENTS });
    const attempts = await t.db.$queryRaw<{ attempts: number; n: number }[]>`
      select attempts, count(*)::int as n from dead_letters_current group by 1 order by 1`;
    expect(attempts).toEqual([{ attempts: 1, n: EVENTS - IN_FLIGHT }, { attempts: 2, n: IN_FLIGHT }]);
    expect(await t.db.deliveryAttempt.count({ where: { outcome: 'LEASE_LOST', attemptNumber: 1 } })).toBe(IN_FLIGHT);
  });
});
