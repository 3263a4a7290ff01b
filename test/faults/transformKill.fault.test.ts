// Fault: `kill -9` of the service process while its runner applies a large payload transform. The
// batch in flight rolls back with the process; a new process takes the transform over once the dead
// one's lease lapses and continues from the items left: every member ends patched exactly once
// (the patch appends to an array, so a second application would show), with one history row each.
import { afterAll, describe, expect, it } from 'vitest';
import { applyTransform } from '../../src/domain/payloadTransforms.ts';
import { parsePayloadPatch } from '../../src/domain/payloadPatch.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { scaled, waitFor } from '../helpers/faults.ts';
import { startService, type ServiceProcess } from '../helpers/serviceProcess.ts';

const EVENTS = scaled(20_000, 5_000);
const t = useTestDatabase();
const services: ServiceProcess[] = [];
afterAll(async () => {
  await Promise.all(services.map((s) => s.stop('SIGKILL')));
});
const env = () => ({ DATABASE_URL: t.url, RETRY_ENABLED: 'false' });
const progress = async () => (await t.db.transform.findFirstOrThrow({ select: { id: true, status: true, processed: true, matched: true, changed: true, skipped: true } }));

describe('kill -9 while a transform is applied', () => {
  it('continues in a new process from the last committed batch, patching every member exactly once', async () => {
    await t.handle.pool.query(`insert into dead_letters (event_type, payload, status, error_message)
      select 'tagged', jsonb_build_object('n', i, 'tags', jsonb_build_array('a'), 'pad', repeat('x', 500)), 'EXHAUSTED', 'HTTP 422'
        from generate_series(1, $1::int) i`, [EVENTS]);
    const id = await applyTransform(t.db, 'ops', {
      filter: { eventTypes: ['tagged'] }, patch: parsePayloadPatch({ patch: [{ op: 'add', path: '/tags/-', value: 'fixed' }] }), reason: null, requeue: false, skipFailing: false,
    });
    expect(await progress()).toMatchObject({ status: 'RUNNING', matched: EVENTS, processed: 0 });

    const victim = await startService(env());
    services.push(victim);
    await waitFor(async () => (await progress()).processed >= 1_000, 60_000, 'a few batches applied');
    victim.child.kill('SIGKILL');
    expect(await victim.exited).toBeNull();
    const atKill = await progress();
    expect(atKill.status).toBe('RUNNING');
    expect(atKill.processed).toBeLessThan(EVENTS);
    // What is committed is consistent: every handled item is gone, every one left is untouched.
    const [left] = (await t.handle.pool.query<{ items: number; untouched: number }>(`
      select (select count(*)::int from transform_items) as items,
             (select count(*)::int from dead_letters where payload->'tags' = '["a"]') as untouched`)).rows;
    expect(left).toEqual({ items: EVENTS - atKill.processed, untouched: EVENTS - atKill.processed });

    // The dead process's lease (30 s) is made to lapse rather than waited out.
    await t.handle.pool.query(`update transforms set lease_expires_at = now() - interval '1 second'`);
    services.push(await startService(env()));
    await waitFor(async () => (await progress()).status === 'APPLIED', 120_000, 'transform APPLIED');

    expect(await progress()).toMatchObject({ id, status: 'APPLIED', matched: EVENTS, processed: EVENTS, changed: EVENTS, skipped: 0 });
    const { rows } = await t.handle.pool.query(`select payload->'tags' as tags, count(*)::int as n from dead_letters group by 1`);
    expect(rows).toEqual([{ tags: ['a', 'fixed'], n: EVENTS }]);
    const { rows: history } = await t.handle.pool.query(`
      select count(*)::int as n, count(distinct dead_letter_id)::int as distinct_ids from dead_letter_actions where transform_id = $1`, [id.toString()]);
    expect(history).toEqual([{ n: EVENTS, distinct_ids: EVENTS }]);
  }, 240_000);
});
