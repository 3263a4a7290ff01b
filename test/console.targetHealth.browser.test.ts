// The Policies page shows the connection state of a broker target beside its description, in a real
// headless Chromium against the real service, with the broker's password nowhere on the page.
import { afterAll, describe, expect, it } from 'vitest';
import type { ClaimedDeadLetter } from '../src/db/sql/claimDueDeadLetters.ts';
import { upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import { TARGET_KINDS } from '../src/workers/targets/registry.ts';
import { closeTargetKinds, createTargetDeliver } from '../src/workers/targets/targetKind.ts';
import { axeViolations } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();
// Registered first, so it runs after the console's service (which delivers through them) has closed.
afterAll(async () => {
  await closeTargetKinds(TARGET_KINDS);
});
const app = useConsole(t, { RETRY_ENABLED: 'false' }, { timeoutMs: 15_000 });

describe('the Policies page', () => {
  it('shows a broker target that cannot be reached as disconnected, with its error and without its password', async () => {
    const password = 'console-never-shows-this';
    await upsertRetryPolicy(t.db, 'order.placed', {
      allowPrivateTarget: true, target: { kind: 'amqp', settings: { url: `amqp://guest:${password}@127.0.0.1:1/prod`, exchange: 'orders' } },
    }, 'test', TARGET_KINDS);
    const policy = await t.db.retryPolicy.findUniqueOrThrow({ where: { eventType: 'order.placed' } });
    // One delivery, as the retry loop of this process would make, opens (and fails) the connection.
    const event = { id: 1n, deliveryGeneration: 0, eventType: 'order.placed', payload: {}, payloadJson: '{}', headers: null, queue: '', source: '', attempts: 1, occurredAt: new Date() };
    expect(await createTargetDeliver(TARGET_KINDS)(event as unknown as ClaimedDeadLetter, policy, new AbortController().signal))
      .toMatchObject({ ok: false, failureKind: 'UNREACHABLE' });

    const page = await app.open('/policies');
    const row = page.getByRole('row', { name: /order\.placed/ });
    await row.getByText('amqp exchange orders on 127.0.0.1:1 vhost prod').waitFor();

    expect(await row.getByTestId('target-health').innerText()).toMatch(/^disconnected .*ECONNREFUSED/);
    expect(await page.content()).not.toContain(password);
    expect(await axeViolations(page)).toEqual([]);
  });
});
