import { beforeAll, describe, expect, it } from 'vitest';
import { claimDueDeadLetters } from '../src/db/sql/claimDueDeadLetters.ts';
import { closeDeadLetters } from '../src/db/sql/closeDeadLetters.ts';
import { completeDelivery } from '../src/db/sql/completeDelivery.ts';
import { editDeadLetterPayload } from '../src/db/sql/editDeadLetterPayload.ts';
import { failDelivery } from '../src/db/sql/failDelivery.ts';
import { releaseLeases } from '../src/db/sql/releaseLeases.ts';
import { renewLeases } from '../src/db/sql/renewLeases.ts';
import { requeueDeadLetters } from '../src/db/sql/requeueDeadLetters.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';

const t = useTestDatabase();

interface Stamp {
  status: string;
  version: number;
  change_id: bigint;
  resolved: boolean;
  resolved_by: string | null;
  generation: number;
  /** Row versions written since the last look: 1 when the statement stamped the row itself. */
  writes: number;
}

// Counts the row versions each update writes, by id: the statement's own, and the second update
// tg_dead_letter_states__update makes of a row the statement left unstamped. An AFTER row trigger
// takes no lock and changes nothing the stamp reads.
beforeAll(async () => {
  await t.db.$executeRaw`create table state_writes (id bigint not null)`;
  await t.db.$executeRaw`create function count_state_write() returns trigger language plpgsql as $$
    begin insert into state_writes values (new.id); return null; end $$`;
  await t.db.$executeRaw`create trigger zz_count_state_write after update on dead_letter_states
    for each row execute function count_state_write()`;
});

async function stampOf(id: bigint): Promise<Stamp> {
  const [row] = await t.db.$queryRaw<Stamp[]>`
    select s.status::text as status, s.version, s.change_id, s.resolved_at is not null as resolved, s.resolved_by,
           s.delivery_generation as generation,
           (select count(*)::int from state_writes w where w.id = s.id) as writes
      from dead_letter_states s where s.id = ${id}`;
  await t.db.$executeRaw`delete from state_writes`;
  return row!;
}

const attempt = { workerId: 'w', durationMs: 1, statusCode: 200, responseBody: null };
const claim = () => claimDueDeadLetters(t.db, { limit: 10, workerId: 'w', leaseSeconds: 30, inProcessEventTypes: ['order.placed'] });

describe('the state row stamp', () => {
  it('is written by the engine and the operator actions in the statement itself, one row version per write', async () => {
    const { id } = await insertDeadLetter(t.db, { status: 'PENDING', nextAttemptAt: new Date(Date.now() - 1000) });
    const steps: Array<[string, Stamp]> = [['recorded', await stampOf(id)]];
    const step = async <T>(name: string, write: () => Promise<T>): Promise<T> => {
      const result = await write();
      steps.push([name, await stampOf(id)]);
      return result;
    };
    const claimOne = async () => (await claim())[0]!;

    let held = await step('claim', claimOne);
    await step('renew', () => renewLeases(t.db, [{ id, leaseToken: held.leaseToken }], 60));
    await step('release', () => releaseLeases(t.db, [{ id, leaseToken: held.leaseToken }]));
    held = await step('claim', claimOne);
    await step('fail', () => failDelivery(t.db, {
      ...attempt, id, leaseToken: held.leaseToken, outcome: 'FAILED', errorMessage: 'HTTP 503', isPermanent: false,
      delayMs: -1000, policyMaxAttempts: 5,
    }));
    held = await step('claim', claimOne);
    await step('complete', () => completeDelivery(t.db, { ...attempt, id, leaseToken: held.leaseToken }));
    const current = async () => [{ id, version: steps.at(-1)![1].version }];
    const requeue = { allowed: ['SUCCEEDED' as const], at: null, resetAttempts: false, actor: 'ops', reason: null, redriveId: null };
    await step('requeue', async () => requeueDeadLetters(t.db, { ...requeue, target: { kind: 'ids', rows: await current() } }));
    await step('resolve', async () => closeDeadLetters(t.db, {
      target: { kind: 'ids', rows: await current() }, allowed: ['PENDING'], to: 'RESOLVED', actor: 'ops', reason: 'fixed',
    }));
    // The payload lives on dead_letters: its update trigger stamps the state row, or leaves it to
    // the statement that requeued it.
    const edit = { id, allowed: ['RESOLVED' as const, 'PENDING' as const], actor: 'ops', reason: null };
    await step('edit and retry', async () => editDeadLetterPayload(t.db, { ...edit, version: (await current())[0]!.version, payloadJson: '{"a":1}', requeue: true }));
    await step('edit', async () => editDeadLetterPayload(t.db, { ...edit, version: (await current())[0]!.version, payloadJson: '{"a":2}', requeue: false }));

    const summary = steps.map(([name, s]) => [name, s.status, s.version, s.resolved, s.resolved_by, s.generation, s.writes]);
    expect(summary).toEqual([
      ['recorded', 'PENDING', 0, false, null, 0, 0],
      ['claim', 'PROCESSING', 1, false, null, 0, 1],
      ['renew', 'PROCESSING', 2, false, null, 0, 1],
      ['release', 'PENDING', 3, false, null, 0, 1],
      ['claim', 'PROCESSING', 4, false, null, 0, 1],
      ['fail', 'PENDING', 5, false, null, 0, 1],
      ['claim', 'PROCESSING', 6, false, null, 0, 1],
      ['complete', 'SUCCEEDED', 7, true, null, 0, 1],
      ['requeue', 'PENDING', 8, false, null, 1, 1], // a new delivery of a delivered event
      ['resolve', 'RESOLVED', 9, true, 'ops', 1, 1],
      ['edit and retry', 'PENDING', 10, false, null, 1, 1],
      ['edit', 'PENDING', 11, false, null, 1, 1],
    ]);
    const cursors = steps.map(([, s]) => s.change_id);
    expect(cursors).toEqual([...cursors].sort((a, b) => (a < b ? -1 : 1)));
    expect(new Set(cursors).size).toBe(cursors.length);
  });

  it('is given to rows a writer outside Lazarus updates without it, once per transaction', async () => {
    const { id } = await insertDeadLetter(t.db, { status: 'EXHAUSTED', attempts: 3 });
    const before = await stampOf(id);

    await t.db.$executeRaw`update dead_letter_states set status = 'RESOLVED', resolved_by = 'ops' where id = ${id}`;
    const resolved = await stampOf(id);
    await t.db.$executeRaw`update dead_letter_states set status = 'SUCCEEDED' where id = ${id}`;
    await stampOf(id);
    // Reopened by hand: resolution cleared, a new delivery generation; two statements in one
    // transaction are one version step and one cursor position.
    const [, , reopened] = await t.db.$transaction([
      t.db.$executeRaw`update dead_letter_states set status = 'PENDING', next_attempt_at = now() where id = ${id}`,
      t.db.$executeRaw`update dead_letter_states set attempts = 0 where id = ${id}`,
      t.db.$queryRaw<{ xid: string; change_xid: string }[]>`
        select pg_current_xact_id()::text as xid, change_xid::text from dead_letter_states where id = ${id}`,
    ]);
    const after = await stampOf(id);

    expect(resolved).toMatchObject({ status: 'RESOLVED', version: before.version + 1, resolved: true, resolved_by: 'ops', writes: 2 });
    expect(resolved.change_id).toBeGreaterThan(before.change_id);
    expect(after).toMatchObject({ status: 'PENDING', version: before.version + 3, resolved: false, resolved_by: null, generation: 1 });
    expect(reopened[0]!.change_xid).toBe(reopened[0]!.xid);
  });
});
