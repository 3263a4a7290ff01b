// Every delivery attempt in full on the event page (issue 35 item 1): in a real headless Chromium
// with a real mouse, against the real service on a real PostgreSQL, with attempts made by the
// retry pass against a real local HTTP receiver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRetryPass } from '../src/workers/retry/runRetryPass.ts';
import { axeViolations, screenshot } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { passDeps, setPolicy } from './helpers/retry.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();
let sink: Sink;

beforeAll(async () => {
  sink = await startSink();
});
afterAll(async () => {
  await sink?.close();
});
const app = useConsole(t, { RETRY_ENABLED: 'false' }, { timeoutMs: 15_000 });

describe('console, delivery attempts', () => {
  it('shows each attempt’s request and response, and why the last one was the last', async () => {
    await setPolicy(t.db, 'order.placed', {
      targetUrl: `${sink.url}/secret-path-token`, signingSecret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=', allowPrivateTarget: true, maxAttempts: 5,
    });
    const event = await insertDeadLetter(t.db, { payload: { orderId: 'A-1042', sku: null } });
    sink.respond = (_req, res) => res.writeHead(503, { 'x-request-id': 'req-503-a', 'retry-after': '1' }).end('inventory is down');
    await runRetryPass(passDeps(t.db));
    await t.db.deadLetter.update({ where: { id: event.id }, data: { nextAttemptAt: new Date(0) } });
    sink.respond = (_req, res) => res.writeHead(422, { 'content-type': 'application/json', 'x-request-id': 'req-422-b' })
      .end(JSON.stringify({ error: 'sku must be a string', field: 'sku' }));
    await runRetryPass(passDeps(t.db));
    const signature = sink.requests[1]!.headers['webhook-signature'] as string;

    const page = await app.open(`/failures/${event.id}`);
    const second = page.getByTestId('attempt-2');
    // The latest failed attempt opens with its exchange shown.
    await second.getByTestId('permanent-reason').waitFor();
    expect(await second.getByTestId('permanent-reason').innerText()).toBe('Not retried: HTTP 422 is one of the policy’s permanent status codes.');
    const response = second.getByRole('region', { name: 'Attempt 2 response' });
    await response.getByRole('row', { name: 'x-request-id req-422-b' }).waitFor();
    expect(await response.locator('pre').innerText()).toBe('{"error":"sku must be a string","field":"sku"}');
    const request = second.getByRole('region', { name: 'Attempt 2 request' });
    expect(await request.innerText()).toContain(`webhook to ${new URL(sink.url).host}`);
    await request.getByRole('row', { name: 'webhook-signature [redacted]' }).waitFor();
    expect(await second.innerText()).toMatch(/^Attempt 2: PERMANENT_FAILURE \(HTTP 422\) in \d+ ms REJECTED\n/);

    // The earlier attempt is folded; a real click opens it.
    const first = page.getByTestId('attempt-1');
    expect(await first.innerText()).toContain('Retried: not a permanent failure.');
    expect(await first.getByRole('row', { name: 'x-request-id req-503-a' }).isVisible()).toBe(false);
    await first.getByText('Request and response').click();
    await first.getByRole('row', { name: 'x-request-id req-503-a' }).waitFor();
    expect(await first.getByRole('region', { name: 'Attempt 1 response' }).locator('pre').innerText()).toBe('inventory is down');

    const html = await page.content();
    expect(html).not.toContain(signature);
    expect(html).not.toContain('secret-path-token');
    expect(await axeViolations(page)).toEqual([]);
    await first.getByText('Request and response').click();
    await second.evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await screenshot(page, 'event-attempts');
    await page.close();
  });
});
