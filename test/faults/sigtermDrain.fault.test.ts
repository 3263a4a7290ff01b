// Fault 10: SIGTERM with webhook deliveries in flight. The service stops claiming, lets in-flight
// deliveries that answer within SHUTDOWN_TIMEOUT_MS finish and be recorded, releases the rest
// (back to PENDING, the attempt refunded, no attempt row) and exits 0. A restart delivers them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { deliveriesById, expectExactAccounting, scaled, waitFor } from '../helpers/faults.ts';
import { setPolicy } from '../helpers/retry.ts';
import { startService, type ServiceProcess } from '../helpers/serviceProcess.ts';
import { startSink, type Sink } from '../helpers/sink.ts';

const EVENTS = scaled(300, 80);
const IN_FLIGHT = scaled(100, 30);
const FINISHING = IN_FLIGHT / 2;

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

const env = { RETRY_BATCH_SIZE: String(IN_FLIGHT), RETRY_CONCURRENCY: String(IN_FLIGHT), RETRY_POLL_INTERVAL_MS: '250', SHUTDOWN_TIMEOUT_MS: '2000' };

describe('SIGTERM with deliveries in flight', () => {
  it('finishes what answers in time, releases the rest without charging the attempt, and exits 0', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true, timeoutMs: 30_000 });
    await t.db.$executeRaw`insert into dead_letters (event_type) select 'order.placed' from generate_series(1, ${EVENTS}::int)`;
    sink.hold();
    const service = await startService({ DATABASE_URL: t.url, ...env });
    services.push(service);
    await waitFor(() => sink.heldCount === IN_FLIGHT, 20_000, 'deliveries in flight');

    service.child.kill('SIGTERM');
    await waitFor(() => service.output().includes('"shutting down"'), 5_000, 'shutdown logged');
    expect(sink.release(200, FINISHING)).toBe(FINISHING);
    expect(await service.exited).toBe(0);

    expect(sink.requests.length).toBe(IN_FLIGHT);
    await expectExactAccounting(t.db, EVENTS, { PENDING: EVENTS - FINISHING, SUCCEEDED: FINISHING });
    expect(await t.db.deadLetter.count({ where: { status: 'PENDING', attempts: 0 } })).toBe(EVENTS - FINISHING);
    expect(await t.db.deliveryAttempt.count()).toBe(FINISHING);

    sink.release();
    services.push(await startService({ DATABASE_URL: t.url, ...env }));
    await waitFor(async () => (await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) === EVENTS, 30_000, 'all delivered after restart');
    const seen = deliveriesById(sink.requests);
    expect(seen.size).toBe(EVENTS);
    expect([...seen.values()].filter((n) => n === 2).length).toBe(IN_FLIGHT - FINISHING);
    await expectExactAccounting(t.db, EVENTS, { SUCCEEDED: EVENTS });
    expect(await t.db.deadLetter.count({ where: { attempts: 1 } })).toBe(EVENTS);
  });
});
