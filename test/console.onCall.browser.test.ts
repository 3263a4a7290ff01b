// What an on-call engineer paged at 3 a.m. trips over in the console (issue 35 item 7), in a real
// headless Chromium with a real mouse, against the real service (whose folder keeps the error
// groups) on a real PostgreSQL. What the page claims is checked in the database.
import { describe, expect, it } from 'vitest';
import { axeViolations, replaceEditorText } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();
const app = useConsole(t, { RETRY_ENABLED: 'false', LAZARUS_REDRIVE_THRESHOLD: '1000000' }, { timeoutMs: 15_000 });
const sql = (text: string, values: unknown[] = []) => t.handle.pool.query(text, values);

/** `n` events of one error, `age` before now (a Postgres interval). */
async function failures(n: number, o: { eventType: string; kind?: string; message: string; status?: string; age?: string; payload?: object }): Promise<void> {
  await sql(`insert into dead_letters (event_type, error_kind, error_message, status, attempts, payload, created_at)
             select $1, $2::"ErrorKind", $3, $4::"DeadLetterStatus", 5, $7::jsonb, now() - $6::interval from generate_series(1, $5::int)`,
    [o.eventType, o.kind ?? 'DOWNSTREAM_API', o.message, o.status ?? 'EXHAUSTED', n, o.age ?? '0 seconds', JSON.stringify(o.payload ?? { n: 1 })]);
}

describe('console, on call', () => {
  it('lists a 2,000-event burst above a newer single failure by default, and names a group whose message is empty', async () => {
    await failures(2000, { eventType: 'payment.captured', message: 'HTTP 502 from psp', age: '20 minutes' });
    await failures(1, { eventType: 'invoice.sent', kind: 'VALIDATION', message: '' });
    const page = await app.open('/groups');
    await page.getByTestId('group-row').nth(1).waitFor();
    await page.getByTestId('group-row').first().getByText('2,000', { exact: true }).first().waitFor();
    const rows = await page.getByTestId('group-row').allInnerTexts();
    expect(rows[0]).toMatch(/DOWNSTREAM_API HTTP <n> from psp\s+HTTP 502 from psp\s+payment\.captured\s+2,000\s+2,000/);
    expect(rows[1]).toMatch(/VALIDATION \(empty message\)\s+invoice\.sent\s+1\s+1/);
    expect(await page.getByLabel('Order by').inputValue()).toBe('TREND');
    expect(await axeViolations(page)).toEqual([]);

    const empty = page.getByRole('link', { name: '(empty message) VALIDATION invoice.sent' });
    await empty.click();
    const { rows: [group] } = await sql(`select error_group_id::text as id from dead_letters where event_type = 'invoice.sent'`);
    await page.waitForURL(new RegExp(`/groups/${group.id}$`));
    await page.getByRole('heading', { name: 'VALIDATION (empty message)' }).waitFor();
  });

  it('counts only unresolved events in the overview’s top errors', async () => {
    await failures(300, { eventType: 'order.placed', message: 'HTTP 503 from inventory', status: 'SUCCEEDED' });
    await failures(5, { eventType: 'refund.issued', message: 'ledger timeout' });
    await failures(2, { eventType: 'refund.issued', message: 'ledger timeout', status: 'SUCCEEDED' });
    const page = await app.open('/');
    await page.getByTestId('top-error').first().waitFor();
    // The folder keeps the groups' counts a moment after the commit; the overview re-reads on their change.
    await page.getByTestId('top-error').getByText('7', { exact: true }).waitFor();
    expect(await page.getByTestId('top-error').allInnerTexts()).toEqual([expect.stringMatching(/^DOWNSTREAM_API ledger timeout\s+refund\.issued\s+5\s+7\s+.*ago$/)]);
    expect(await axeViolations(page)).toEqual([]);
    const { rows } = await sql(`select event_type, unresolved_count::int as n from error_groups order by event_type`);
    expect(rows).toEqual([{ event_type: 'order.placed', n: 0 }, { event_type: 'refund.issued', n: 5 }]);
  });

  it('dates the group’s first history entry by when it was first seen, as its header does', async () => {
    await failures(3, { eventType: 'invoice.sent', message: 'SMTP relay refused', age: '2 days 3 hours' });
    const { rows: [group] } = await sql(`select error_group_id::text as id from dead_letters where event_type = 'invoice.sent'`);
    const page = await app.open(`/groups/${group.id}`);
    await page.getByTestId('group-history').locator('li').first().waitFor();
    const header = /first seen (\S+ \S+ ago)/.exec(await page.getByTestId('group-status').innerText())![1]!;
    expect(header).toBe('2d 3h ago');
    expect(await page.getByTestId('group-history').locator('li').first().innerText()).toMatch(/^2d 3h ago · OPEN by system — first seen$/);
  });

  it('shows the whole Attempts header in the failures list', async () => {
    await failures(1, { eventType: 'invoice.sent', message: 'SMTP relay refused' });
    const page = await app.open('/failures');
    await page.getByTestId('row').first().waitFor();
    const header = page.getByRole('columnheader', { name: 'Attempts' });
    expect(await header.evaluate((th) => ({ cut: th.scrollWidth > th.clientWidth }))).toEqual({ cut: false });
  });

  it('warns in the transform preview that some matches already succeeded, and flags their samples', async () => {
    await failures(2, { eventType: 'payment.failed', message: 'currency not supported', payload: { amount: 5 } });
    await failures(1, { eventType: 'payment.failed', message: 'currency not supported', status: 'SUCCEEDED', payload: { amount: 5, currency: 'usd', fixedBy: 'alice' } });
    const payloads = async () => (await sql(`select string_agg(id || '=' || payload::text, ' ' order by id) as s from dead_letters_current`)).rows[0].s as string;
    const start = await payloads();
    const page = await app.open('/failures?type=payment.failed');
    await page.getByTestId('matching').getByText('3 matching').waitFor();
    await page.getByRole('button', { name: /Act on all 3 matching/ }).click();
    await page.getByLabel('Transform payloads').check();
    const editor = page.getByTestId('patch-editor').locator('.cm-content');
    await replaceEditorText(editor, '[{"op": "add", "path": "/currency", "value": "EUR"}]');
    await page.getByRole('button', { name: 'Preview transform' }).click();

    const warning = page.getByTestId('transform-finished');
    await warning.waitFor();
    expect(await warning.innerText()).toMatch(/^1 of them already ended: 1 SUCCEEDED\. The transform rewrites their stored payloads too/);
    expect(await page.getByTestId('transform-preview').innerText()).toMatch(/Of 3 matching: 3 change/);
    expect(await page.getByTestId('transform-sample').filter({ hasText: 'Already SUCCEEDED' }).count()).toBe(1);
    expect(await axeViolations(page)).toEqual([]);
    expect(await payloads()).toBe(start);
  });
});
