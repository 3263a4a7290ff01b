// Fault 7: three processes drain one table at once. Each (event, attempt) is claimed exactly
// once, and no claim ever returns more rows than its batch size (the worker prints OVERCLAIM if
// one did; the claim statement itself throws past its limit).
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { expectExactAccounting, killAll, scaled, startWorker, waitFor } from '../helpers/faults.ts';

const EVENTS = scaled(10_000, 2_000);
const BATCH = 50;

const t = useTestDatabase();
const children: ChildProcess[] = [];
afterEach(() => killAll(children));

describe('three retry processes draining one table', () => {
  it(`claim each of ${EVENTS} (event, attempt) pairs exactly once and never more than a batch per claim`, async () => {
    await t.db.$executeRaw`insert into dead_letters (event_type, payload) select 'order.placed', jsonb_build_object('n', g) from generate_series(1, ${EVENTS}::int) g`;
    const workers = await Promise.all(['p1', 'p2', 'p3'].map((id) => startWorker(children, t.url, id, { inProcess: true, batchSize: BATCH })));

    await waitFor(async () => (await t.db.deadLetter.count({ where: { status: 'SUCCEEDED' } })) === EVENTS, 90_000, 'drained');

    const [stats] = await t.db.$queryRaw<{ attempts: number; pairs: number; max_attempts: number; workers: number }[]>`
      select count(*)::int as attempts, count(distinct (dead_letter_id, attempt_number))::int as pairs,
             max(attempt_number)::int as max_attempts, count(distinct worker_id)::int as workers
        from delivery_attempts`;
    expect(stats).toEqual({ attempts: EVENTS, pairs: EVENTS, max_attempts: 1, workers: 3 });
    for (const w of workers) expect(w.output()).not.toMatch(/OVERCLAIM|LOST/);
    await expectExactAccounting(t.db, EVENTS, { SUCCEEDED: EVENTS });
  });
});
