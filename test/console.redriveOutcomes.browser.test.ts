// A redrive's page says what became of its events, not just that the runner requeued them: in a
// real headless Chromium against the real service (redrive runner, retry loop, error-group folder)
// on a real PostgreSQL, with a local receiver that refuses some events for good.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, screenshot } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';
import { setPolicy } from './helpers/retry.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();
let receiver: Sink;

beforeAll(async () => {
  receiver = await startSink();
  receiver.respond = (req, res) => void res.writeHead((req.json.payload as { ok?: boolean }).ok ? 200 : 503).end();
});
afterAll(async () => {
  await receiver?.close();
});
const app = useConsole(t, {}, { timeoutMs: 20_000 });

const sql = (text: string, values: unknown[] = []) => t.handle.pool.query(text, values);
async function graphql(query: string, variables: Record<string, unknown>): Promise<any> {
  const response = await fetch(`${app.service.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  return response.json();
}

describe('console redrive outcomes', () => {
  it('shows delivered and exhausted counts, the error groups of the failures and the honest summary, live until every event has ended', async () => {
    await setPolicy(t.db, 'ledger.sync', { targetUrl: receiver.url, allowPrivateTarget: true, maxAttempts: 10, backoff: 'FIXED', baseDelayMs: 3_600_000, maxDelayMs: 3_600_000 });
    // 16 the receiver takes; 4 it refuses with one attempt left (they end EXHAUSTED); 1 it refuses with many (it keeps failing).
    await sql(`insert into dead_letters (event_type, error_message, status, payload) select 'ledger.sync', 'ledger timed out', 'EXHAUSTED', '{"ok": true}' from generate_series(1, 16)`);
    await sql(`insert into dead_letters (event_type, error_message, status, payload, max_attempts) select 'ledger.sync', 'ledger refused the connection', 'EXHAUSTED', '{"ok": false}', 1 from generate_series(1, 4)`);
    const { rows: [stuck] } = await sql(`insert into dead_letters (event_type, error_message, status, payload) values ('ledger.sync', 'ledger timed out', 'EXHAUSTED', '{"ok": false}') returning id::text`);
    const started = await graphql(`mutation ($input: RequeueDeadLettersInput!) { requeueDeadLetters(input: $input) { __typename ... on RequeueResult { redrive { id } } } }`,
      { input: { filter: { eventTypes: ['ledger.sync'] }, ratePerSecond: 100, resetAttempts: true } });
    const id = started.data.requeueDeadLetters.redrive.id as string;

    const page = await app.open(`/redrives/${id}`);
    const summary = page.getByTestId('redrive-summary');
    // The runner is done (COMPLETED) but one event is still failing: the page says so.
    await page.getByText('Requeued all 21 — 1 still failing').waitFor();
    await page.getByRole('heading', { name: /REQUEUED/ }).waitFor();
    expect(await page.getByTestId('outcome-delivered').innerText()).toBe('16 delivered');
    expect(await page.getByTestId('outcome-exhausted').innerText()).toBe('4 exhausted');
    expect(await page.getByTestId('outcome-failing').innerText()).toBe('1 failing, retrying');
    const groups = page.getByTestId('redrive-error-groups');
    await groups.getByRole('link', { name: /ledger refused the connection/ }).waitFor();
    expect(await groups.locator('tbody tr').allInnerTexts()).toEqual([
      expect.stringMatching(/^4 \(0 failing, 4 exhausted\)\s+ledger\.sync · UNKNOWN: ledger refused the connection$/),
      expect.stringMatching(/^1 \(1 failing, 0 exhausted\)\s+ledger\.sync · UNKNOWN: ledger timed out$/),
    ]);
    expect(await axeViolations(page)).toEqual([]);

    // Its exhausted events, listed on the page.
    await page.getByRole('button', { name: '4 exhausted' }).click();
    await page.getByRole('heading', { name: 'Its events: exhausted' }).waitFor();
    await expect.poll(() => page.getByTestId('redrive-events').locator('tbody tr').count()).toBe(4);
    expect(await page.getByTestId('redrive-events').locator('tbody').innerText()).not.toMatch(/SUCCEEDED|PENDING/);
    await screenshot(page, 'redrive');

    // Someone resolves the last one elsewhere: the open page turns to done by itself.
    await graphql(`mutation ($input: ResolveDeadLettersInput!) { resolveDeadLetters(input: $input) { __typename } }`, { input: { ids: [stuck.id], reason: 'posted by hand' } });
    await page.getByRole('heading', { name: /DONE/ }).waitFor();
    expect(await summary.innerText()).toBe('Done: 16 delivered, 4 exhausted, 1 resolved');
    expect(await axeViolations(page)).toEqual([]);

    // The group link opens the group's page.
    await page.getByRole('link', { name: /ledger refused the connection/ }).click();
    await page.waitForURL(/\/groups\/\d+$/);
    await page.close();
  });
});
