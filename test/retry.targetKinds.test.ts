// A delivery target is a seam: a kind the test registers (settings, description, deliver) is saved
// on a policy and delivered through by the retry pass, with no other file knowing about it.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ClaimedDeadLetter } from '../src/db/sql/claimDueDeadLetters.ts';
import { Prisma } from '../src/generated/prisma/client.ts';
import { InvalidRetryPolicyError, upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { TARGET_KINDS } from '../src/workers/targets/registry.ts';
import { createTargetDeliver, deliveryId, kindMap, type TargetKind } from '../src/workers/targets/targetKind.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { attemptsOf, passDeps, setPolicy, statusOf } from './helpers/retry.ts';

const t = useTestDatabase();

/** The smallest kind: appends each delivery to an array, as a broker would take the message. */
function memoryKind(inbox: { id: string; queue: string; payload: unknown }[]): TargetKind<{ queue: string; token?: string }> {
  return {
    kind: 'memory',
    label: 'In memory (tests)',
    fields: [{ name: 'queue', label: 'Queue', isRequired: true }, { name: 'token', label: 'Token', isSecret: true }],
    settings: z.strictObject({ queue: z.string().min(1), token: z.string().optional() }),
    describe: (s) => `memory queue ${s.queue}`,
    publicSettings: (s) => ({ queue: s.queue }),
    deliver: async (event: ClaimedDeadLetter, settings) => {
      inbox.push({ id: deliveryId(event), queue: settings.queue, payload: event.payload });
      return { ok: true, statusCode: null, responseBody: null };
    },
  };
}

const policySnapshot = () => t.db.$queryRaw`select * from retry_policies order by event_type`;

describe('a target kind registered beside the webhook', () => {
  it('delivers the events of a policy with that kind through it, with the stable id <id>.<generation>', async () => {
    const inbox: { id: string; queue: string; payload: unknown }[] = [];
    const kinds = kindMap([...TARGET_KINDS.values(), memoryKind(inbox)]);
    await upsertRetryPolicy(t.db, 'order.placed', { target: { kind: 'memory', settings: { queue: 'orders', token: 's3cret' } } }, 'test', kinds);
    const first = await insertDeadLetter(t.db, { payload: { orderId: 1 } });
    const again = await insertDeadLetter(t.db, { payload: { orderId: 2 } });
    await t.db.deadLetter.update({ where: { id: again.id }, data: { deliveryGeneration: 2 } });

    const summary = await runRetryPass(passDeps(t.db, { deliver: createTargetDeliver(kinds) }));

    expect(summary).toMatchObject({ claimed: 2, succeeded: 2 });
    expect(inbox.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      { id: `${first.id}`, queue: 'orders', payload: { orderId: 1 } },
      { id: `${again.id}.2`, queue: 'orders', payload: { orderId: 2 } },
    ]);
    expect(await statusOf(t.db, first.id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
  });

  it('refuses settings the kind does not accept with an error naming the setting, and writes nothing', async () => {
    const kinds = kindMap([memoryKind([])]);
    const before = await policySnapshot();

    const attempt = upsertRetryPolicy(t.db, 'order.placed', { target: { kind: 'memory', settings: { queue: '' } } }, 'test', kinds);

    await expect(attempt).rejects.toBeInstanceOf(InvalidRetryPolicyError);
    await expect(attempt).rejects.toMatchObject({ field: 'target.settings.queue', reason: 'INVALID_SETTING' });
    expect(await policySnapshot()).toEqual(before);
  });

  it('refuses a kind this process does not know when saving', async () => {
    const before = await policySnapshot();

    const attempt = upsertRetryPolicy(t.db, 'order.placed', { target: { kind: 'memory', settings: { queue: 'q' } } }, 'test', TARGET_KINDS);

    await expect(attempt).rejects.toMatchObject({ field: 'target.kind', reason: 'UNKNOWN_TARGET_KIND' });
    expect(await policySnapshot()).toEqual(before);
  });

  it('fails and retries an event whose stored kind this process does not know, leaving it for a process that does', async () => {
    await setPolicy(t.db, 'order.placed', { targetKind: 'pigeon', targetSettings: { loft: 'north' }, maxAttempts: 5 });
    const event = await insertDeadLetter(t.db);

    await runRetryPass(passDeps(t.db, { deliver: createTargetDeliver(TARGET_KINDS) }));

    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect(await attemptsOf(t.db, event.id)).toEqual([
      expect.objectContaining({ outcome: 'FAILED', errorMessage: 'target kind "pigeon" is not known to this process' }),
    ]);
  });

  it('holds the events of a type whose policy has no target kind', async () => {
    const inbox: { id: string; queue: string; payload: unknown }[] = [];
    const kinds = kindMap([memoryKind(inbox)]);
    await upsertRetryPolicy(t.db, 'order.placed', { target: { kind: 'memory', settings: { queue: 'q' } } }, 'test', kinds);
    await upsertRetryPolicy(t.db, 'order.placed', { target: null }, 'test', kinds);
    const event = await insertDeadLetter(t.db);

    const summary = await runRetryPass(passDeps(t.db, { deliver: createTargetDeliver(kinds) }));

    expect(summary).toMatchObject({ claimed: 0 });
    expect(inbox).toEqual([]);
    expect(await statusOf(t.db, event.id)).toMatchObject({ status: 'PENDING', attempts: 0 });
  });
});

describe('the table’s CHECKs on targets', () => {
  it.each([
    ['a kind without settings', `'memory', null`],
    ['settings that are not an object', `'memory', '[1]'::jsonb`],
    ['a webhook whose URL is not http(s)', `'webhook', '{"url": "ftp://example.com/x"}'::jsonb`],
    ['a webhook without a URL', `'webhook', '{"secret": "a-very-long-secret-value"}'::jsonb`],
    ['a kind name that is not an identifier', `'Web Hook', '{}'::jsonb`],
  ])('refuses %s', async (_name, values) => {
    await expect(t.db.$executeRaw(Prisma.raw(`insert into retry_policies (event_type, target_kind, target_settings) values ('x', ${values})`)))
      .rejects.toThrow(/check constraint/);
  });
});
