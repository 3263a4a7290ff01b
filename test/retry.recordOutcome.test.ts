// Issue 32 item 8: a success whose write found the database connection gone was dropped and left
// to lease expiry, so the event was delivered again. The connection is broken the real way: the
// completion write is held on a row lock, its backend is terminated (pg_terminate_backend, as a
// PostgreSQL restart does), then the lock is let go.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import type { Deliver } from '../src/workers/retry/delivery.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { waitFor } from './helpers/faults.ts';
import { attemptsOf, passDeps, setPolicy, statusOf } from './helpers/retry.ts';

const t = useTestDatabase();
let side: pg.Pool;

beforeAll(() => {
  side = testPool(t.url, { max: 2, application_name: 'lazarus-test-side' });
});
afterAll(() => side.end());
beforeEach(async () => {
  await setPolicy(t.db, 'order.placed', { targetUrl: 'http://127.0.0.1:9/unused', allowPrivateTarget: true });
});

/** Waits until a statement is blocked by `blocker`'s lock, terminates that statement's backend, then releases the lock. */
async function terminateWriteBlockedBy(blocker: pg.PoolClient, blockerPid: number): Promise<void> {
  const blocked = `select pid from pg_stat_activity where $1::int = any(pg_blocking_pids(pid))`;
  await waitFor(async () => (await side.query(blocked, [blockerPid])).rowCount! > 0, 10_000, 'the outcome write waiting on the lock');
  await side.query(`select pg_terminate_backend(pid) from (${blocked}) b`, [blockerPid]);
  await blocker.query('rollback');
  blocker.release();
}

describe('runRetryPass when the connection breaks between delivery and record', () => {
  it('retries the fenced write while the lease holds: SUCCEEDED, delivered once, not again after the lease', async () => {
    const event = await insertDeadLetter(t.db);
    let deliveries = 0;
    let broken: Promise<void> | undefined;
    const deliver: Deliver = async (e) => {
      deliveries += 1;
      if (deliveries === 1) {
        const blocker = await side.connect();
        const { rows } = await blocker.query<{ pid: number }>('select pg_backend_pid() as pid');
        await blocker.query('begin');
        await blocker.query('select 1 from dead_letter_states where id = $1 for update', [e.id.toString()]);
        broken = terminateWriteBlockedBy(blocker, rows[0]!.pid);
      }
      return { ok: true, statusCode: 200, responseBody: null };
    };

    const summary = await runRetryPass(passDeps(t.db, { deliver }));
    await broken;

    expect(summary).toMatchObject({ claimed: 1, succeeded: 1, recordFailed: 0, leaseLost: 0 });
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1, leaseToken: null });
    expect(await attemptsOf(t.db, event.id)).toEqual([
      { attemptNumber: 1, outcome: 'SUCCEEDED', statusCode: 200, workerId: 'worker-a', errorMessage: null },
    ]);

    // The lease's expiry passes (a no-op unless the event was left PROCESSING) and another pass runs.
    await t.db.$executeRaw`update dead_letter_states set lease_expires_at = now() - interval '1 second'
                            where id = ${event.id} and status = 'PROCESSING'`;
    await runRetryPass(passDeps(t.db, { deliver }));
    expect(deliveries).toBe(1);
  });
});
