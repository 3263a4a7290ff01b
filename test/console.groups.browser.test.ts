// The console's error group views in a real headless Chromium, against the real service (whose
// folder keeps the groups) on a real PostgreSQL. What the page claims is checked in the database.
import { describe, expect, it } from 'vitest';
import { axeViolations, screenshot } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();
const app = useConsole(t, { RETRY_ENABLED: 'false', LAZARUS_REDRIVE_THRESHOLD: '1000' }, { timeoutMs: 10_000 });
const sql = (text: string, values: unknown[] = []) => t.handle.pool.query(text, values);

/** `frame` gives each event a Node stack with that frame on a line of its own (line numbers differ). */
async function failures(n: number, o: { eventType: string; message: string; status?: string; frame?: string }): Promise<void> {
  await sql(`insert into dead_letters (event_type, error_kind, error_message, status, attempts, error_stack)
             select $1, 'DOWNSTREAM_API', $2 || ' (request ' || i || ')', $3::"DeadLetterStatus", 5,
                    'Error: ' || $2 || chr(10) || '    at ' || $5 || ':' || (10 + i) || ':7)' from generate_series(1, $4::int) i`,
    [o.eventType, o.message, o.status ?? 'EXHAUSTED', n, o.frame ?? null]);
}
const groupIdOf = async (eventType: string) => (await sql('select error_group_id::text as id from dead_letters_current where event_type = $1 limit 1', [eventType])).rows[0].id as string;

describe('console error groups', () => {
  it('lists groups with counts and sparklines, and acknowledges one from its page with a reason', async () => {
    await failures(4, { eventType: 'invoice.sent', message: 'SMTP relay refused' });
    await failures(2, { eventType: 'order.placed', message: 'HTTP 503 from inventory', frame: 'chargeCard (/app/src/payments/charge.ts' });
    const list = await app.open('/groups');
    // The service's folder creates the groups; the list refetches on errorGroupChanged.
    await list.getByTestId('group-row').nth(1).waitFor();
    const rows = await list.getByTestId('group-row').allInnerTexts();
    expect(rows).toEqual(expect.arrayContaining([
      // Under the message: without a stack, the first line of its first event's error as it was;
      expect.stringMatching(/OPEN\s+DOWNSTREAM_API SMTP relay refused \(request <n>\)\s+SMTP relay refused \(request 1\)\s+invoice\.sent\s+4\s+4/),
      // with one, its first frame as stored.
      expect.stringMatching(/OPEN\s+DOWNSTREAM_API HTTP <n> from inventory \(request <n>\)\s+at chargeCard \(\/app\/src\/payments\/charge\.ts:11:7\)\s+order\.placed\s+2\s+2/),
    ]));
    await list.locator('[data-testid="group-row"] canvas').nth(1).waitFor(); // a sparkline per group
    await screenshot(list, 'groups');
    expect(await axeViolations(list)).toEqual([]);

    await list.getByRole('link', { name: 'SMTP relay refused (request <n>)' }).click();
    await list.getByTestId('group-unresolved').getByText('4', { exact: true }).waitFor();
    await list.getByTestId('row').nth(3).waitFor(); // its four events, in the failures list
    await list.getByRole('button', { name: 'Reopen' }).and(list.locator('[disabled]')).waitFor();
    await list.getByLabel('Reason', { exact: true }).first().fill('mail provider incident INC-7');
    await list.getByRole('button', { name: 'Acknowledge' }).click();
    await list.getByTestId('group-status').getByText('ACKNOWLEDGED').waitFor();
    await list.getByTestId('group-history').getByText(/OPEN → ACKNOWLEDGED by local — mail provider incident INC-7/).waitFor();
    await screenshot(list, 'group-detail');
    expect(await axeViolations(list)).toEqual([]);

    const id = await groupIdOf('invoice.sent');
    const { rows: db } = await sql('select g.status::text, a.actor, a.reason from error_groups g join error_group_actions a on a.group_id = g.id where g.id = $1 order by a.id', [id]);
    expect(db.map((r) => [r.status, r.actor, r.reason])).toEqual([['ACKNOWLEDGED', 'system', 'first seen'], ['ACKNOWLEDGED', 'local', 'mail provider incident INC-7']]);
  });

  it('requeues a group: dry-run preview with what is not eligible, then confirm, then only its events change', async () => {
    await failures(3, { eventType: 'refund.issued', message: 'ledger timeout', frame: 'refund (/srv/app/ledger/refund.ts' });
    await failures(1, { eventType: 'refund.issued', message: 'ledger timeout', status: 'SUCCEEDED', frame: 'refund (/srv/app/ledger/refund.ts' });
    await failures(2, { eventType: 'other.thing', message: 'ledger timeout' });
    const id = await groupIdOf('refund.issued');
    const page = await app.open(`/groups/${id}`);
    await page.getByTestId('group-unresolved').getByText('3', { exact: true }).waitFor();
    expect(await page.getByTestId('group-frames').innerText()).toBe('at refund (ledger/refund.ts)');

    await page.getByRole('button', { name: /Requeue, resolve or discard the group/ }).click();
    await page.getByRole('button', { name: 'Preview (dry run)' }).click();
    const preview = page.getByTestId('preview');
    await preview.getByText('will be requeued').waitFor();
    expect(await preview.innerText()).toMatch(/3 will be requeued\. Nothing has changed yet\./);
    expect(await preview.innerText()).toMatch(/1 SUCCEEDED not eligible/);
    await screenshot(page, 'group-requeue');
    expect((await sql(`select count(*)::int as n from dead_letters_current where status = 'PENDING'`)).rows[0].n).toBe(0);

    await page.getByRole('button', { name: 'Confirm requeue of 3' }).click();
    await page.getByTestId('bulk-done').getByText(/3 dead letters changed/).waitFor();
    const { rows } = await sql(`select event_type, status::text, count(*)::int as n from dead_letters_current group by 1, 2 order by 1, 2`);
    expect(rows).toEqual(expect.arrayContaining([
      { event_type: 'refund.issued', status: 'PENDING', n: 3 },
      { event_type: 'refund.issued', status: 'SUCCEEDED', n: 1 },
      { event_type: 'other.thing', status: 'EXHAUSTED', n: 2 },
    ]));
  });
});
