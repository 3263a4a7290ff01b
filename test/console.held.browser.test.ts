// Held events in the console: the list, the event page and the overview say which PENDING events
// wait for something other than time, and why; saving a policy that would let them go says how many
// first (release on save), and releases them as a ramped redrive or at once. Real Chromium, the real service with its retry loop, a local receiver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, screenshot } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';
import { setPolicy } from './helpers/retry.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();
const THRESHOLD = 20;
let receiver: Sink;

beforeAll(async () => {
  receiver = await startSink();
});
afterAll(async () => {
  await receiver?.close();
});
const app = useConsole(t, {
  LAZARUS_REDRIVE_THRESHOLD: String(THRESHOLD), LAZARUS_REDRIVE_RATE_PER_SECOND: '20',
}, { timeoutMs: 20_000 });

const sql = (text: string, values: unknown[] = []) => t.handle.pool.query(text, values);
const pendingOf = async (eventType: string) =>
  (await sql(`select count(*)::int as n from dead_letters_current where event_type = $1 and status = 'PENDING'`, [eventType])).rows[0].n;

describe('held events in the console', () => {
  it('shows why each event is held and what releases it, in the list, on its page and on the overview', async () => {
    await setPolicy(t.db, 'invoice.sent', { targetUrl: receiver.url, allowPrivateTarget: true, paused: true });
    await setPolicy(t.db, 'ledger.sync', { targetUrl: receiver.url, allowPrivateTarget: true, ordered: true });
    await sql(`insert into dead_letters (event_type, error_message, status) select 'order.placed', 'HTTP 503 from fulfilment', 'PENDING' from generate_series(1, 3)`);
    await sql(`insert into dead_letters (event_type, error_message, status) values ('invoice.sent', 'SMTP relay refused', 'PENDING')`);
    const { rows: [head] } = await sql(`insert into dead_letters (event_type, error_message, status, ordering_key, ordering_seq, next_attempt_at)
      values ('ledger.sync', 'ledger refused the entry', 'EXHAUSTED', 'acct-7', 1, null) returning id::text`);
    const { rows: [behind] } = await sql(`insert into dead_letters (event_type, error_message, status, ordering_key, ordering_seq)
      values ('ledger.sync', 'ledger refused the entry', 'PENDING', 'acct-7', 2) returning id::text`);
    const { rows: [placed] } = await sql(`select id::text from dead_letters where event_type = 'order.placed' order by id limit 1`);

    const list = await app.open('/failures?status=PENDING');
    await list.getByTestId('row').nth(4).waitFor();
    const held = list.getByTestId('held');
    expect((await held.allInnerTexts()).sort()).toEqual(['held: key blocked', 'held: no target', 'held: no target', 'held: no target', 'held: type paused']);
    expect(await list.getByTestId('row').filter({ hasText: 'invoice.sent' }).getByTestId('held').getAttribute('title')).toBe('invoice.sent is paused (the invoice.sent policy).');
    await screenshot(list, 'failures-held');
    expect(await axeViolations(list)).toEqual([]);

    const page = await app.open(`/failures/${placed.id}`);
    const note = page.getByTestId('held-note');
    await note.waitFor();
    expect(await note.innerText()).toBe('Held. The default policy "*" has no delivery target, and no in-process handler takes order.placed. Setting a target on the default policy "*" (Retry policies) releases it.');
    await screenshot(page, 'event-held');
    expect(await axeViolations(page)).toEqual([]);
    await note.getByRole('link', { name: 'Retry policies' }).click();
    await page.getByRole('heading', { name: 'Retry policies' }).waitFor();

    const blocked = await app.open(`/failures/${behind.id}`);
    expect(await blocked.getByTestId('held-note').innerText()).toContain('the head of this event’s ordering key is EXHAUSTED');
    await blocked.getByTestId('held-note').getByRole('link', { name: head.id }).click();
    await blocked.getByRole('heading', { name: new RegExp(`Dead letter ${head.id}`) }).waitFor();
    expect(await blocked.getByTestId('held-note').count()).toBe(0);

    const overview = await app.open('/');
    await overview.getByTestId('held-total').getByText('5', { exact: true }).waitFor();
    expect(await overview.getByTestId('held-counts').innerText()).toContain('order.placed\tno target (policy *)\t3');
    await screenshot(overview, 'overview-held');
    expect(await axeViolations(overview)).toEqual([]);
  });

  it('says how many held events a save releases; saved paused they stay held, released they are delivered', async () => {
    await sql(`insert into dead_letters (event_type, error_message, status) select 'order.placed', 'HTTP 503 from fulfilment', 'PENDING' from generate_series(1, 12)`);
    await sql(`insert into dead_letters (event_type, error_message, status) select 'order.refunded', 'HTTP 503 from payments', 'PENDING' from generate_series(1, 2)`);
    const page = await app.open('/policies');
    await page.getByRole('button', { name: 'New policy for an event type' }).click();
    await page.getByLabel('Event type').fill('order.placed');
    await page.getByLabel('Delivery target').selectOption({ label: 'Webhook (HTTP POST)' });
    await page.getByLabel('Webhook URL').fill(receiver.url);
    await page.getByLabel('allow a private-network target').check();
    await page.getByRole('button', { name: 'Save policy' }).click();

    const dialog = page.getByRole('alertdialog', { name: 'Release on save: 12 held events' });
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain('This save lets go 12 held events of order.placed (12 no target).');
    await screenshot(page, 'policy-release-on-save');
    expect(await axeViolations(page)).toEqual([]);
    // Nothing is saved until the operator chooses.
    expect((await sql(`select count(*)::int as n from retry_policies where event_type = 'order.placed'`)).rows[0].n).toBe(0);

    await dialog.getByRole('button', { name: 'Save paused' }).click();
    await page.getByRole('form').waitFor({ state: 'detached' });
    expect((await sql(`select paused, target_kind from retry_policies where event_type = 'order.placed'`)).rows[0]).toEqual({ paused: true, target_kind: 'webhook' });
    expect(await pendingOf('order.placed')).toBe(12);
    expect(receiver.requests).toEqual([]);

    // Another type, released at once: delivered, and the paused one still waits.
    await page.getByRole('button', { name: 'New policy for an event type' }).click();
    await page.getByLabel('Event type').fill('order.refunded');
    await page.getByLabel('Delivery target').selectOption({ label: 'Webhook (HTTP POST)' });
    await page.getByLabel('Webhook URL').fill(receiver.url);
    await page.getByLabel('allow a private-network target').check();
    await page.getByRole('button', { name: 'Save policy' }).click();
    const second = page.getByRole('alertdialog', { name: 'Release on save: 2 held events' });
    await second.getByRole('button', { name: 'Save and release 2 now' }).click();
    await page.getByRole('form').waitFor({ state: 'detached' });
    const succeeded = async () => (await sql(`select count(*)::int as n from dead_letters_current where event_type = 'order.refunded' and status = 'SUCCEEDED'`)).rows[0].n;
    await expect.poll(succeeded, { timeout: 20_000 }).toBe(2);
    expect(receiver.requests.map((r) => r.json.type)).toEqual(['order.refunded', 'order.refunded']);
    expect(await pendingOf('order.placed')).toBe(12);
  });

  it('releases a backlog above the threshold as a ramped redrive by default, chosen with the mouse, and shows it on its redrive page', async () => {
    const EVENTS = 30;
    await sql(`insert into dead_letters (event_type, error_message, status) select 'order.shipped', 'HTTP 503 from carrier', 'PENDING' from generate_series(1, $1::int)`, [EVENTS]);
    const page = await app.open('/policies');
    await page.getByRole('button', { name: 'New policy for an event type' }).click();
    await page.getByLabel('Event type').fill('order.shipped');
    await page.getByLabel('Delivery target').selectOption({ label: 'Webhook (HTTP POST)' });
    await page.getByLabel('Webhook URL').fill(receiver.url);
    await page.getByLabel('allow a private-network target').check();
    await page.getByRole('button', { name: 'Save policy' }).click();

    const dialog = page.getByRole('alertdialog', { name: `Release on save: ${EVENTS} held events` });
    await dialog.waitFor();
    const ramped = dialog.getByRole('radio', { name: /as a ramped redrive/ });
    const atOnce = dialog.getByRole('radio', { name: /at once/ });
    // Above the threshold the ramp is the default.
    expect(await ramped.isChecked()).toBe(true);
    expect(await dialog.getByText(`(default: more than ${THRESHOLD})`).count()).toBe(1);
    await atOnce.click();
    expect(await atOnce.isChecked()).toBe(true);
    await dialog.getByRole('button', { name: `Save and release ${EVENTS} now` }).waitFor();
    await ramped.click();
    expect(await ramped.isChecked()).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'policy-release-ramped');
    await dialog.getByRole('button', { name: `Save and release ${EVENTS} ramped` }).click();

    // The console opens the redrive that releases them; its events were not all made due at once.
    await page.getByRole('heading', { name: /^Redrive \d+/ }).waitFor();
    const { rows: [redrive] } = await sql(`select id::text, total, reason from redrives`);
    expect(redrive).toEqual({ id: expect.any(String), total: EVENTS, reason: 'held events released by saving the order.shipped policy' });
    expect(page.url()).toBe(`${app.service.url}/redrives/${redrive.id}`);
    const parked = (await sql(`select count(*)::int as n from dead_letter_states where event_type = 'order.shipped' and next_attempt_at >= '9999-01-01'`)).rows[0].n;
    expect(parked).toBeGreaterThan(EVENTS / 2);
    const succeeded = async () => (await sql(`select count(*)::int as n from dead_letters_current where event_type = 'order.shipped' and status = 'SUCCEEDED'`)).rows[0].n;
    await expect.poll(succeeded, { timeout: 90_000, interval: 500 }).toBe(EVENTS);
    expect(receiver.requests.filter((r) => r.json.type === 'order.shipped')).toHaveLength(EVENTS);
    await page.getByText('Reason').waitFor();
    expect(await page.getByText('held events released by saving the order.shipped policy').count()).toBe(1);
  }, 120_000);
});
