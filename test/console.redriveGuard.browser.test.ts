// A redrive its guard paused, followed and resumed with new limits from the console, in a real
// headless Chromium against the real service (redrive runner, retry loop, alert deliverer) on a
// real PostgreSQL, with a local receiver that fails and then recovers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';
import { setPolicy } from './helpers/retry.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();
const EVENTS = 100;
let receiver: Sink;
let failing = true;

beforeAll(async () => {
  receiver = await startSink();
  receiver.respond = (_req, res) => void res.writeHead(failing ? 503 : 200).end(failing ? 'down' : 'ok');
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

describe('console redrive guard', () => {
  it('shows why its guard paused a ramped redrive, raises the alert, and resumes it with a new rate from the page until it completes', async () => {
    await setPolicy(t.db, 'ledger.sync', { targetUrl: receiver.url, allowPrivateTarget: true, maxAttempts: 1_000, backoff: 'FIXED', baseDelayMs: 200, maxDelayMs: 200 });
    await sql(`insert into alert_rules (name, trigger, target_url, signing_secret, allow_private_target) values ('redrive guard', 'REDRIVE_PAUSED', $1, 'a-very-long-secret-value', true)`, [receiver.url]);
    await sql(`insert into dead_letters (event_type, error_message, status) select 'ledger.sync', 'timeout ' || g, 'EXHAUSTED' from generate_series(1, $1::int) g`, [EVENTS]);
    const started = await graphql(`mutation ($input: RequeueDeadLettersInput!) {
      requeueDeadLetters(input: $input) { __typename ... on RequeueResult { redrive { id } } ... on MutationError { code message } } }`,
    { input: { filter: { eventTypes: ['ledger.sync'] }, reason: 'ledger back', redriveLimits: { startRatePerSecond: 4, maxRatePerSecond: 8, rampSeconds: 2, pauseWhenFailureRateAbove: 0.5, windowSize: 10 } } });
    const id = started.data.requeueDeadLetters.redrive.id as string;

    const page = await app.open(`/redrives/${id}`);
    await page.getByRole('heading', { name: /PAUSED/ }).waitFor();
    const paused = page.getByTestId('redrive-paused');
    expect(await paused.innerText()).toMatch(/^Paused by its guard: failure rate [\d.]+ \(\d+ of the last 10 deliveries\) is above 0.5$/);
    const { rows: [before] } = await sql('select processed, total, paused_by::text from redrives where id = $1', [id]);
    expect(before).toMatchObject({ paused_by: 'GUARD', total: EVENTS });
    expect(before.processed).toBeLessThan(EVENTS);
    expect(await axeViolations(page)).toEqual([]);

    // The guard's pause raised REDRIVE_PAUSED, shown in the alert history with a link back here.
    const alerts = await app.open('/alerts');
    await alerts.getByTestId('alert-row').getByRole('link', { name: `redrive ${id}` }).waitFor();

    failing = false;
    await page.getByText('Resume with new limits').click();
    await page.getByLabel('Start at (events per second)').fill('20');
    await page.getByLabel('Maximum (events per second)').fill('40');
    await page.getByLabel('Ramp over (seconds)').fill('0');
    await page.getByRole('button', { name: 'Resume with these limits' }).click();
    // Every event requeued and delivered: the runner's COMPLETED, and done.
    await page.getByRole('heading', { name: /DONE/ }).waitFor();
    expect(await page.getByTestId('redrive-summary').innerText()).toBe(`Done: ${EVENTS} delivered, 0 exhausted`);
    expect(await page.getByTestId('redrive-rate').innerText()).toMatch(/^40\/s/);
    expect(await page.getByTestId('redrive-counts').innerText()).toMatch(new RegExp(`${EVENTS} of ${EVENTS} processed \\(100%\\): ${EVENTS} requeued`));

    const { rows: [after] } = await sql('select status::text, rate_per_second, start_rate_per_second, ramp_seconds from redrives where id = $1', [id]);
    expect(after).toEqual({ status: 'COMPLETED', rate_per_second: 40, start_rate_per_second: 20, ramp_seconds: 0 });
    const { rows: history } = await sql(`select action::text, actor from redrive_actions where redrive_id = $1 order by id`, [id]);
    expect(history.map((h) => `${h.action} by ${h.actor}`)).toEqual(expect.arrayContaining(['PAUSED by redrive-guard', 'RESUMED by local']));
  });
});
