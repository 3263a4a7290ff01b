// The Policies page shows the connection state of a broker target beside its description, in a real
// headless Chromium against the real service, with the broker's password nowhere on the page.
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import type { ClaimedDeadLetter } from '../src/db/sql/claimDueDeadLetters.ts';
import { upsertRetryPolicy } from '../src/domain/retryPolicies.ts';
import { startService, type RunningService } from '../src/service.ts';
import { TARGET_KINDS } from '../src/workers/targets/registry.ts';
import { closeTargetKinds, createTargetDeliver } from '../src/workers/targets/targetKind.ts';
import { axeViolations, launchChromium, VIEWPORT } from './helpers/browser.ts';
import { useTestDatabase } from './helpers/db.ts';
import { silentLogger } from './helpers/retry.ts';

const t = useTestDatabase();
let browser: Browser;
let service: RunningService;

beforeAll(async () => {
  if (!existsSync(new URL('../web/dist/index.html', import.meta.url))) throw new Error('the console is not built: run `npm run build:web` (npm install does it)');
  browser = await launchChromium();
  service = await startService(loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, RETRY_ENABLED: 'false' }), silentLogger);
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
  await closeTargetKinds(TARGET_KINDS);
});

describe('the Policies page', () => {
  it('shows a broker target that cannot be reached as disconnected, with its error and without its password', async () => {
    const password = 'console-never-shows-this';
    await upsertRetryPolicy(t.db, 'order.placed', {
      allowPrivateTarget: true, target: { kind: 'amqp', settings: { url: `amqp://guest:${password}@127.0.0.1:1/prod`, exchange: 'orders' } },
    }, 'test', TARGET_KINDS);
    const policy = await t.db.retryPolicy.findUniqueOrThrow({ where: { eventType: 'order.placed' } });
    // One delivery, as the retry loop of this process would make, opens (and fails) the connection.
    const event = { id: 1n, deliveryGeneration: 0, eventType: 'order.placed', payload: {}, headers: null, queue: '', source: '', attempts: 1, occurredAt: new Date() };
    expect(await createTargetDeliver(TARGET_KINDS)(event as unknown as ClaimedDeadLetter, policy, new AbortController().signal))
      .toMatchObject({ ok: false, failureKind: 'UNREACHABLE' });

    const page = await browser.newPage({ viewport: VIEWPORT });
    page.setDefaultTimeout(15_000);
    await page.goto(`${service.url}/policies`);
    const row = page.getByRole('row', { name: /order\.placed/ });
    await row.getByText('amqp exchange orders on 127.0.0.1:1 vhost prod').waitFor();

    expect(await row.getByTestId('target-health').innerText()).toMatch(/^disconnected .*ECONNREFUSED/);
    expect(await page.content()).not.toContain(password);
    expect(await axeViolations(page)).toEqual([]);
  });
});
