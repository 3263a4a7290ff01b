// Fault 2: a zombie. A process holding leases is SIGSTOPped past their expiry, another process
// takes the events over and finishes them, then the zombie is SIGCONTed with its deliveries
// answered: the fencing token makes every one of its writes a no-op.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { deliveriesById, expectExactAccounting, killAll, scaled, startWorker, waitFor } from '../helpers/faults.ts';
import { setPolicy } from '../helpers/retry.ts';
import { startSink, type Sink } from '../helpers/sink.ts';

const EVENTS = scaled(100, 20);

const t = useTestDatabase();
const children: ChildProcess[] = [];
let sink: Sink;

beforeAll(async () => {
  sink = await startSink();
});
afterAll(() => sink.close());
afterEach(() => killAll(children));

describe('a zombie process resumed after its leases were taken over', () => {
  it('changes nothing: the new owner’s results stand and the zombie’s writes are all fenced off', async () => {
    await setPolicy(t.db, 'order.placed', { targetUrl: sink.url, allowPrivateTarget: true });
    await t.db.$executeRaw`insert into dead_letters (event_type) select 'order.placed' from generate_series(1, ${EVENTS}::int)`;
    sink.hold();
    const zombie = await startWorker(children, t.url, 'zombie', { batchSize: EVENTS, concurrency: EVENTS, leaseSeconds: 2 });
    await waitFor(() => sink.heldCount === EVENTS, 20_000, 'zombie deliveries in flight');
    const zombieRequests = sink.requests.length;

    zombie.child.kill('SIGSTOP');
    await waitFor(async () => (await t.db.$queryRaw<{ n: number }[]>`
      select count(*)::int as n from dead_letters_current where lease_expires_at < now()`)[0]!.n === EVENTS, 20_000, 'leases expired');
    // The zombie's requests stay unanswered; the new owner's are answered at once.
    sink.hold(false);
    const owner = await startWorker(children, t.url, 'owner', { batchSize: EVENTS, concurrency: EVENTS, leaseSeconds: 30 });
    const ownerDelivered = () => sink.requests.length - zombieRequests === EVENTS;
    await waitFor(async () => ownerDelivered() && (await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) === EVENTS, 20_000, 'owner finished');
    owner.child.kill('SIGTERM');
    expect((await once(owner.child, 'exit'))[0]).toBe(0);
    const before = await t.db.$queryRaw`select id, status::text, attempts, version, updated_at from dead_letters_current order by id`;

    zombie.child.kill('SIGCONT');
    expect(sink.release()).toBe(EVENTS);
    zombie.child.kill('SIGTERM');
    expect((await once(zombie.child, 'exit'))[0]).toBe(0);

    const lost = [...zombie.output().matchAll(/LOST (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(lost).toBe(EVENTS);
    expect(await t.db.$queryRaw`select id, status::text, attempts, version, updated_at from dead_letters_current order by id`).toEqual(before);
    const outcomes = await t.db.$queryRaw<{ worker_id: string; outcome: string; attempt_number: number; n: number }[]>`
      select worker_id, outcome::text, attempt_number, count(*)::int as n from delivery_attempts group by 1, 2, 3 order by 1, 2`;
    expect(outcomes).toEqual([
      { worker_id: 'owner', outcome: 'SUCCEEDED', attempt_number: 2, n: EVENTS },
      { worker_id: 'zombie', outcome: 'LEASE_LOST', attempt_number: 1, n: EVENTS },
    ]);
    expect([...deliveriesById(sink.requests).values()].every((n) => n === 2)).toBe(true);
    await expectExactAccounting(t.db, EVENTS, { SUCCEEDED: EVENTS });
  });
});
