// The operator console in a real headless Chromium, against the real service on a real PostgreSQL.
// Every check looks at the screen and then at the database: what the page claims must be true.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { startService, type RunningService } from '../src/service.ts';
import { axeViolations, replaceEditorText, screenshot } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { liveSubscriptions, untilSubscribed } from './helpers/live.ts';
import { freePort } from './helpers/postgres.ts';
import { silentLogger } from './helpers/retry.ts';
import { startService as startServiceProcess } from './helpers/serviceProcess.ts';

const t = useTestDatabase();
const app = useConsole(t, { LAZARUS_REDRIVE_THRESHOLD: '1000' });

const sql = (text: string, values: unknown[] = []) => t.handle.pool.query(text, values);
const statusOf = async (id: bigint | string) => (await sql('select status from dead_letters_current where id = $1', [String(id)])).rows[0]?.status;

describe('console', () => {
  it('shows a plain SQL INSERT on the overview and in the list without a reload', async () => {
    await insertDeadLetter(t.db, { status: 'EXHAUSTED', errorMessage: 'HTTP 503 from inventory-service' });
    const overview = await app.open('/');
    await overview.getByTestId('count-total').getByText('1', { exact: true }).waitFor();
    const list = await app.open('/failures');
    await list.getByTestId('row').first().waitFor();
    await overview.getByText('Top errors').waitFor();
    // Both pages hold their live subscriptions before the row is written.
    await untilSubscribed(app.service.url, 2);

    const { rows } = await sql(`insert into dead_letters (event_type, payload, error_message, status) values ('invoice.sent', '{"n": 1}', 'SMTP relay refused', 'EXHAUSTED') returning id`);

    await overview.getByTestId('count-total').getByText('2', { exact: true }).waitFor();
    await overview.getByTestId('count-EXHAUSTED').getByText('2', { exact: true }).waitFor();
    await list.getByTestId('new-pill').getByText('1 new').waitFor();
    expect(await list.getByTestId('row').count()).toBe(1);
    await list.getByTestId('new-pill').click();
    await list.getByRole('link', { name: String(rows[0].id) }).waitFor();
    expect(await list.getByTestId('row').count()).toBe(2);

    await screenshot(overview, 'overview');
    await screenshot(list, 'failures');
    expect(await axeViolations(overview)).toEqual([]);
    expect(await axeViolations(list)).toEqual([]);
  });

  it('filters by error text and keeps the filter in the URL', async () => {
    await insertDeadLetter(t.db, { errorMessage: 'connection refused by ledger' });
    await insertDeadLetter(t.db, { errorMessage: 'schema mismatch on field total' });
    const page = await app.open('/failures');
    await page.getByTestId('row').nth(1).waitFor();

    await page.getByLabel('Error text').fill('ledger');
    await page.getByRole('button', { name: 'Apply' }).click();

    await page.waitForURL(/q=ledger/);
    await page.getByTestId('matching').getByText('1 matching').waitFor();
    expect(await page.getByTestId('row').allInnerTexts()).toEqual([expect.stringContaining('connection refused by ledger')]);
    // The same URL opened fresh shows the same filtered list.
    const again = await app.open(new URL(page.url()).pathname + new URL(page.url()).search);
    await again.getByTestId('matching').getByText('1 matching').waitFor();
  });

  it('edits a payload with a diff, records the edit in the history, and undoes it', async () => {
    const row = await insertDeadLetter(t.db, { status: 'EXHAUSTED', payload: { orderId: 7, amount: 10 }, errorStack: 'Error: boom\n    at charge (billing.ts:12)' });
    const page = await app.open(`/failures/${row.id}`);
    await page.getByTestId('payload').getByText('"amount": 10').waitFor();
    await screenshot(page, 'event-detail');
    expect(await axeViolations(page)).toEqual([]);

    await page.getByRole('button', { name: 'Edit payload' }).click();
    const editor = page.getByTestId('payload-editor').locator('.cm-merge-b .cm-content');
    await editor.waitFor();
    await replaceEditorText(editor, '{"orderId": 7, "amount": 20}');
    await page.getByTestId('diff').getByText('/amount').waitFor();
    expect(await page.getByTestId('diff').innerText()).toMatch(/replace\s+\/amount\s+→\s+20/);
    await screenshot(page, 'payload-edit');
    await page.getByLabel('Reason').fill('customer corrected amount');
    await page.getByRole('button', { name: 'Save', exact: true }).click();

    await page.getByTestId('timeline').getByText('PAYLOAD_EDITED').waitFor();
    expect((await sql('select payload from dead_letters_current where id = $1', [String(row.id)])).rows[0].payload).toEqual({ orderId: 7, amount: 20 });

    await page.getByRole('button', { name: 'Undo: restore the payload before this edit' }).click();
    await page.getByTestId('payload').getByText('"amount": 10').waitFor();
    expect((await sql('select payload from dead_letters_current where id = $1', [String(row.id)])).rows[0].payload).toEqual({ orderId: 7, amount: 10 });
    const edits = await sql(`select reason from dead_letter_actions where dead_letter_id = $1 and action = 'PAYLOAD_EDITED' order by id`, [String(row.id)]);
    expect(edits.rows.map((r) => r.reason)).toEqual(['customer corrected amount', expect.stringMatching(/^undo of edit \d+$/)]);
  });

  it('shows and edits a number a double cannot carry as stored, not rounded', async () => {
    // JSON.parse would show 12345678901234567000, and saving the edit would store that.
    const { rows: [row] } = await sql(`insert into dead_letters (event_type, payload, error_message) values ('order.placed', '{"id": 12345678901234567890, "amount": 10}', 'x') returning id`);
    const page = await app.open(`/failures/${row.id}`);
    await page.getByTestId('payload').getByText('"amount": 10').waitFor();
    expect(await page.getByTestId('payload').innerText()).toContain('"id": 12345678901234567890');

    await page.getByRole('button', { name: 'Edit payload' }).click();
    const editor = page.getByTestId('payload-editor').locator('.cm-merge-b .cm-content');
    await editor.waitFor();
    await replaceEditorText(editor, '{"id": 12345678901234567890, "amount": 20, "ref": 98765432109876543210}');
    await page.getByTestId('diff').getByText('/ref').waitFor();
    expect(await page.getByTestId('diff').innerText()).not.toMatch(/\/id/);
    await page.getByRole('button', { name: 'Save', exact: true }).click();

    await page.getByTestId('timeline').getByText('PAYLOAD_EDITED').waitFor();
    expect((await sql('select payload::text as payload from dead_letters where id = $1', [String(row.id)])).rows[0].payload)
      .toBe('{"id": 12345678901234567890, "ref": 98765432109876543210, "amount": 20}');
  });

  it('requeues everything matching a filter: dry-run preview, then confirm, then the rows change', async () => {
    const exhausted = await Promise.all([1, 2, 3].map(() => insertDeadLetter(t.db, { eventType: 'refund.issued', status: 'EXHAUSTED' })));
    const done = await insertDeadLetter(t.db, { eventType: 'refund.issued', status: 'SUCCEEDED' });
    const other = await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'EXHAUSTED' });
    const page = await app.open('/failures?type=refund.issued');
    await page.getByTestId('matching').getByText('4 matching').waitFor();

    await page.getByRole('button', { name: /Act on all 4 matching/ }).click();
    await page.getByRole('button', { name: 'Preview (dry run)' }).click();
    const preview = page.getByTestId('preview');
    await preview.getByText('3 will be requeued').waitFor();
    expect(await preview.innerText()).toMatch(/1\s+SUCCEEDED\s+not eligible/);
    await screenshot(page, 'bulk-requeue');
    expect(await axeViolations(page)).toEqual([]);
    // The preview wrote nothing.
    expect(await statusOf(exhausted[0]!.id)).toBe('EXHAUSTED');

    await page.getByRole('button', { name: 'Confirm requeue of 3' }).click();
    await page.getByTestId('bulk-done').getByText('3 dead letters changed').waitFor();
    expect(await Promise.all(exhausted.map((r) => statusOf(r.id)))).toEqual(['PENDING', 'PENDING', 'PENDING']);
    expect(await statusOf(done.id)).toBe('SUCCEEDED');
    expect(await statusOf(other.id)).toBe('EXHAUSTED');
  });

  it('transforms every matching payload: patch, preview with counts and diffs, apply, then undo restores them exactly', async () => {
    await sql(`insert into dead_letters (event_type, payload, error_message, status)
      select 'payment.failed', jsonb_build_object('n', g, 'currency', case when g = 4 then 'EUR' else 'usd' end, 'amount', (g || '.50')::numeric),
             'currency not supported', 'EXHAUSTED' from generate_series(1, 4) g`);
    await insertDeadLetter(t.db, { eventType: 'order.placed', status: 'EXHAUSTED', payload: { currency: 'usd' } });
    const payloads = async () => (await sql(`select string_agg(id || '=' || payload::text, ' ' order by id) as s from dead_letters_current`)).rows[0].s as string;
    const start = await payloads();
    const page = await app.open('/failures?type=payment.failed');
    await page.getByTestId('matching').getByText('4 matching').waitFor();
    await page.getByRole('button', { name: /Act on all 4 matching/ }).click();
    await page.getByLabel('Transform payloads').check();
    const editor = page.getByTestId('patch-editor').locator('.cm-content');
    await editor.waitFor();
    const typePatch = (text: string) => replaceEditorText(editor, text);

    // A patch that does not apply: the failures by reason, and no way to apply it.
    await typePatch('[{"op": "remove", "path": "/legacy"}]');
    await page.getByRole('button', { name: 'Preview transform' }).click();
    await page.getByTestId('transform-failures').getByText('4: operation 0 (remove /legacy): nothing at /legacy').waitFor();
    expect(await page.getByRole('button', { name: /Apply to/ }).isDisabled()).toBe(true);

    await typePatch('[{"op": "replace", "path": "/currency", "value": "EUR"}]');
    await page.getByRole('button', { name: 'Preview transform' }).click();
    const preview = page.getByTestId('transform-preview');
    await preview.getByText(/Of 4 matching/).waitFor();
    expect(await preview.innerText()).toMatch(/Of 4 matching: 3 change, 1 stay the same, 0 the patch does not apply to/);
    expect(await page.getByTestId('transform-sample').count()).toBe(3);
    expect(await page.getByTestId('transform-sample').first().innerText()).toMatch(/replace\s+\/currency\s+→\s+"EUR"/);
    await page.getByTestId('transform-sample').first().locator('.cm-mergeView').waitFor();
    await screenshot(page, 'bulk-transform');
    expect(await axeViolations(page)).toEqual([]);
    expect(await payloads()).toBe(start);

    await page.getByLabel('Reason').fill('psp now takes EUR only');
    await page.getByRole('button', { name: 'Apply to 3' }).click();
    await page.getByTestId('transform-done').getByText(/applied: 3 payloads changed/).waitFor();
    const currencies = await sql(`select payload->>'currency' as c from dead_letters_current where event_type = 'payment.failed' order by id`);
    expect(currencies.rows.map((r) => r.c)).toEqual(['EUR', 'EUR', 'EUR', 'EUR']);

    await page.getByRole('button', { name: /Undo transform \d+/ }).click();
    await page.getByTestId('transform-undone').getByText(/3 payloads restored/).waitFor();
    expect(await payloads()).toBe(start);
    const history = await sql(`select action, count(*)::int as n from dead_letter_actions where transform_id is not null group by action order by action`);
    expect(history.rows).toEqual([{ action: 'PAYLOAD_TRANSFORMED', n: 3 }, { action: 'TRANSFORM_UNDONE', n: 3 }]);
  });

  it('follows a transform larger than one batch while the service applies it, then its undo', async () => {
    await sql(`insert into dead_letters (event_type, payload, error_message, status)
      select 'refund.issued', jsonb_build_object('n', g, 'tags', jsonb_build_array('a')), 'schema mismatch', 'EXHAUSTED' from generate_series(1, 1200) g`);
    const page = await app.open('/failures?type=refund.issued');
    await page.getByTestId('matching').getByText('1,200 matching').waitFor();
    await page.getByRole('button', { name: /Act on all 1,200 matching/ }).click();
    await page.getByLabel('Transform payloads').check();
    const editor = page.getByTestId('patch-editor').locator('.cm-content');
    await replaceEditorText(editor, '[{"op": "add", "path": "/tags/-", "value": "fixed"}]');
    await page.getByRole('button', { name: 'Preview transform' }).click();
    await page.getByRole('button', { name: 'Apply to 1,200' }).click();
    // RUNNING when the mutation returns (more than one batch); the view follows it to APPLIED.
    await page.getByTestId('transform-done').getByText(/applied: 1,200 payloads changed/).waitFor({ timeout: 30_000 });
    expect((await sql(`select count(*)::int as n from dead_letters where payload->'tags' = '["a", "fixed"]'`)).rows[0].n).toBe(1200);
    await page.getByRole('button', { name: /Undo transform \d+/ }).click();
    await page.getByTestId('transform-undone').getByText(/1,200 payloads restored/).waitFor({ timeout: 30_000 });
    expect((await sql(`select count(*)::int as n from dead_letters where payload->'tags' = '["a"]'`)).rows[0].n).toBe(1200);
  });

  it('follows a redrive on screen until it has requeued everything', async () => {
    await sql(`insert into dead_letters (event_type, error_message, status) select 'sync.push', 'timeout ' || g, 'EXHAUSTED' from generate_series(1, 30) g`);
    const page = await app.open('/failures?type=sync.push');
    await page.getByTestId('matching').getByText('30 matching').waitFor();
    await page.getByRole('button', { name: /Act on all 30 matching/ }).click();
    await page.getByLabel(/Rate/).fill('60');
    await page.getByLabel(/Start at/).fill('30');
    await page.getByLabel(/Ramp over/).fill('2');
    await page.getByLabel(/failure share/).fill('0.5');
    await page.getByRole('button', { name: 'Preview (dry run)' }).click();
    await page.getByRole('button', { name: 'Confirm requeue of 30' }).click();

    await page.waitForURL(/\/redrives\/\d+$/);
    expect(await page.getByTestId('redrive-guard').innerText()).toMatch(/pauses itself when more than 50% of the last 100 deliveries fail/);
    // COMPLETED (every event requeued) reads as REQUEUED until every event has ended.
    await page.getByRole('heading', { name: /REQUEUED/ }).waitFor({ timeout: 20_000 });
    expect(await page.getByTestId('redrive-summary').innerText()).toMatch(/^Requeued all 30 — /);
    expect(await page.getByTestId('redrive-rate').innerText()).toMatch(/^60\/s \(ramps from 30\/s to 60\/s over 2 s/);
    expect(await page.getByTestId('redrive-counts').innerText()).toMatch(/30 of 30 processed \(100%\): 30 requeued, 0 skipped/);
    expect((await sql(`select count(*)::int as n from dead_letters_current where event_type = 'sync.push' and status = 'PENDING'`)).rows[0].n).toBe(30);
    expect(await axeViolations(page)).toEqual([]);
    const list = await app.open('/redrives');
    await list.getByRole('link', { name: new URL(page.url()).pathname.split('/').pop()! }).waitFor();
    await screenshot(list, 'redrives');
  });

  it('shows the API’s field error when a policy edit has a bad value, and saves a good one', async () => {
    const page = await app.open('/policies');
    await page.getByRole('button', { name: 'Edit *' }).click();
    await page.getByLabel('Max attempts').fill('0');
    await page.getByRole('button', { name: 'Save policy' }).click();
    const fieldError = page.locator('#maxAttempts-error');
    await fieldError.waitFor();
    expect(await fieldError.innerText()).toMatch(/maxAttempts|attempts/i);
    expect(await page.getByLabel('Max attempts').getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'policies');
    expect(await axeViolations(page)).toEqual([]);

    await page.getByLabel('Max attempts').fill('9');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('cell', { name: '9', exact: true }).waitFor();
    expect((await sql(`select max_attempts from retry_policies where event_type = '*'`)).rows[0].max_attempts).toBe(9);
  });

  it('shows the chosen target kind’s settings, names a bad one, and saves the target', async () => {
    const page = await app.open('/policies');
    await page.getByRole('button', { name: 'New policy for an event type' }).click();
    await page.getByLabel('Event type').fill('order.shipped');
    await page.getByLabel('Delivery target').selectOption({ label: 'Webhook (HTTP POST)' });
    await page.getByLabel('Webhook URL').fill('ftp://hooks.example.com/shipped');
    await page.getByLabel('Signing secret').fill('a-very-long-secret-value');
    await page.getByRole('button', { name: 'Save policy' }).click();
    const fieldError = page.locator('[id="target.settings.url-error"]');
    await fieldError.waitFor();
    expect(await page.getByLabel('Webhook URL').getAttribute('aria-invalid')).toBe('true');
    expect(await axeViolations(page)).toEqual([]);

    await page.getByLabel('Webhook URL').fill('https://hooks.example.com/shipped');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('cell', { name: 'webhook to hooks.example.com, signed' }).waitFor();
    expect((await sql(`select target_kind, target_settings from retry_policies where event_type = 'order.shipped'`)).rows[0])
      .toEqual({ target_kind: 'webhook', target_settings: { url: 'https://hooks.example.com/shipped', secret: 'a-very-long-secret-value' } });
  });

  it('streams changes and delivery outcomes in the live tail', async () => {
    // The tail opens two subscriptions (changes and attempts); pages of earlier tests may hold others.
    const before = (await liveSubscriptions(app.service.url)) ?? 0;
    const page = await app.open('/tail');
    await page.getByText('Waiting for changes').waitFor();
    await untilSubscribed(app.service.url, before + 2);
    const { rows } = await sql(`insert into dead_letters (event_type, error_message) values ('tail.me', 'seen live') returning id`);
    await page.getByTestId('tail').getByText('tail.me').waitFor();
    expect(await page.getByTestId('tail').innerText()).toContain(String(rows[0].id));
    await screenshot(page, 'tail');
    expect(await axeViolations(page)).toEqual([]);
  });

  it('serves assets as a CDN would: hashed and immutable, compressed, revalidated, and GraphiQL the same way', async () => {
    const index = await fetch(`${app.service.url}/failures?status=EXHAUSTED`, { headers: { 'accept-encoding': 'br, gzip' } });
    const html = await index.text();
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(app.service.url + script, { headers: { 'accept-encoding': 'br, gzip' } });
    expect(asset.headers.get('content-encoding')).toBe('br');
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    await asset.arrayBuffer();
    const etag = asset.headers.get('etag')!;
    const again = await fetch(app.service.url + script, { headers: { 'accept-encoding': 'br, gzip', 'if-none-match': etag } });
    expect(again.status).toBe(304);

    const graphiql = await fetch(`${app.service.url}/graphql`, { headers: { accept: 'text/html', 'accept-encoding': 'br, gzip' } });
    const page = await graphiql.text();
    expect(page.length).toBeLessThan(20_000);
    const graphiqlScript = /<script src="(\/assets\/graphiql-[^"]+\.js)"/.exec(page)![1]!;
    const big = await fetch(app.service.url + graphiqlScript, { method: 'HEAD', headers: { 'accept-encoding': 'br, gzip' } });
    expect(big.headers.get('content-encoding')).toBe('br');
    expect(big.headers.get('cache-control')).toContain('immutable');
    // The API still answers its own paths.
    expect((await fetch(`${app.service.url}/health`)).status).toBe(200);
  });
});

describe('console with API keys', () => {
  let keyed: RunningService;
  beforeAll(async () => {
    keyed = await startService(
      loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, LAZARUS_API_KEYS: 'dash:viewer:viewer-token-0123456789,sre:operator:operator-token-0123456789' }),
      silentLogger,
    );
  });
  afterAll(async () => keyed?.close());

  it('asks for a key, refuses a wrong one clearly, disables actions for a viewer and lets an operator act', async () => {
    const row = await insertDeadLetter(t.db, { status: 'EXHAUSTED' });
    const page = await app.open(`/failures/${row.id}`, { base: keyed.url });
    await page.getByLabel('API key').fill('not-the-right-key-at-all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').getByText('That key was not accepted').waitFor();
    await screenshot(page, 'sign-in');
    expect(await axeViolations(page)).toEqual([]);

    await page.getByLabel('API key').fill('viewer-token-0123456789');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('viewer').getByText('viewer').waitFor();
    await page.getByRole('heading', { name: new RegExp(`Dead letter ${row.id}`) }).waitFor();
    expect(await page.getByRole('button', { name: 'Requeue' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Edit payload' }).isDisabled()).toBe(true);
    await page.getByRole('link', { name: 'Retry policies' }).click();
    await page.getByText('managed by admins').waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').fill('operator-token-0123456789');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('viewer').getByText('operator').waitFor();
    await page.goto(`${keyed.url}/failures/${row.id}`);
    await page.getByRole('button', { name: 'Requeue' }).click();
    await page.getByRole('heading', { name: /PENDING/ }).waitFor();
    expect(await statusOf(row.id)).toBe('PENDING');
    const actor = await sql(`select actor from dead_letter_actions where dead_letter_id = $1 and action = 'REQUEUED'`, [String(row.id)]);
    expect(actor.rows).toEqual([{ actor: 'sre' }]);
  });
});

describe('console across a service restart', () => {
  it('shows a reconnecting banner, then catches up from its last cursor with nothing lost', async () => {
    const port = await freePort();
    const env = { DATABASE_URL: t.url, PORT: String(port), RETRY_ENABLED: 'false' };
    let child = await startServiceProcess(env);
    try {
      const page = await app.open('/tail', { base: child.url });
      await page.getByText('Waiting for changes').waitFor();
      await untilSubscribed(child.url, 2); // the tail's two subscriptions: changes and attempts
      const before = await sql(`insert into dead_letters (event_type, error_message) values ('restart.before', 'x') returning id`);
      await page.getByTestId('tail').getByText('restart.before').waitFor();

      await child.stop('SIGKILL');
      await page.getByRole('status').getByText('Reconnecting').waitFor();
      const during = await sql(`insert into dead_letters (event_type, error_message) select 'restart.during', 'y' || g from generate_series(1, 3) g returning id`);
      child = await startServiceProcess(env);

      for (const { id } of during.rows) await page.getByTestId('tail').getByRole('link', { name: String(id), exact: true }).waitFor({ timeout: 20_000 });
      await page.getByRole('status').filter({ hasText: 'Reconnecting' }).waitFor({ state: 'detached' });
      const text = await page.getByTestId('tail').innerText();
      expect(text.match(/restart\.during/g)).toHaveLength(3);
      expect(text.match(/restart\.before/g)).toHaveLength(1);
      expect(before.rows).toHaveLength(1);
    } finally {
      await child.stop();
    }
    // Two service processes start in this test (each a migration check, a LISTEN connection and the
    // console's static files): 30 s was not enough with a second suite beside it on two cores.
  }, 120_000);
});
