// Ticked rows in the console, in a real headless Chromium against the real service: ticks hold across
// cursor pages, live updates and a visit to an event; the bulk dry run on the selection lists exactly
// the ticked rows and says why any is left out; the action changes exactly those rows; and the list
// works from the keyboard (j/k, x, Space, Enter, /) except while the reader types.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { axeViolations } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { untilSubscribed } from './helpers/live.ts';

const t = useTestDatabase();
const app = useConsole(t, { RETRY_ENABLED: 'false' }, { timeoutMs: 20_000 });
const sql = (text: string, values: unknown[] = []) => t.handle.pool.query(text, values);
const rowIds = async (page: Page) => (await page.getByTestId('row').getByRole('link').allInnerTexts()).map((s) => s.trim());
const checkbox = (page: Page, id: string) => page.getByRole('checkbox', { name: `Select event ${id}`, exact: true });
const isFocused = (page: Page, selector: string) => page.locator(selector).evaluate((el) => el === document.activeElement);
const cursorId = async (page: Page) => (await page.locator('tr[aria-current="true"]').getByRole('link').innerText()).trim();
/** Whether the cursor row is wholly in view: inside the scrolled list and below its sticky header. */
async function isCursorInView(page: Page): Promise<boolean> {
  const row = (await page.locator('tr[aria-current="true"]').boundingBox())!;
  const grid = (await page.getByRole('region', { name: 'Matching dead letters' }).boundingBox())!;
  const header = (await page.locator('table.grid thead').boundingBox())!;
  return row.y >= header.y + header.height - 1 && row.y + row.height <= grid.y + grid.height + 1;
}

describe('console: selected rows', () => {
  it('keeps ticks across pages and live updates, previews exactly the ticked rows with why any is left out, and resolves only those', async () => {
    await sql(`insert into dead_letters (event_type, error_message, status) select 'sel.page', 'timeout ' || g, 'EXHAUSTED' from generate_series(1, 150) g`);
    const page = await app.open('/failures?type=sel.page&status=EXHAUSTED');
    await page.getByTestId('matching').getByText('150 matching').waitFor();
    await page.getByTestId('row').nth(2).waitFor();
    const [first, second, third] = await rowIds(page);
    // The cursor row scrolls into view both ways, clear of the sticky header.
    const ids = await sql(`select d.id::text from dead_letters d order by d.id desc limit 20`);
    for (let i = 0; i < 20; i += 1) await page.keyboard.press('j');
    expect(await cursorId(page)).toBe(ids.rows[19].id);
    expect(await isCursorInView(page)).toBe(true);
    for (let i = 0; i < 19; i += 1) await page.keyboard.press('k');
    expect(await cursorId(page)).toBe(first);
    expect(await isCursorInView(page)).toBe(true);
    for (const id of [first!, second!, third!]) await checkbox(page, id).click();
    await page.getByTestId('selected-count').getByText('3 selected').waitFor();

    // Page 2 loads as the list is scrolled with the mouse wheel; its rows are ticked the same way.
    const grid = page.getByRole('region', { name: 'Matching dead letters' });
    const box = (await grid.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    for (let i = 0; i < 3; i += 1) await page.mouse.wheel(0, 2000);
    await page.locator('table.grid[aria-rowcount="150"]').waitFor();
    for (let i = 0; i < 3; i += 1) await page.mouse.wheel(0, 2000);
    await checkbox(page, String((await sql(`select min(id)::text as id from dead_letters`)).rows[0].id)).waitFor();
    const bottom = await rowIds(page);
    const [last, beforeLast] = [bottom[bottom.length - 1]!, bottom[bottom.length - 2]!];
    expect(Number(last)).toBeLessThan(Number(third));
    await checkbox(page, last).click();
    await checkbox(page, beforeLast).click();
    await page.getByTestId('selected-count').getByText('5 selected').waitFor();
    expect(await checkbox(page, first!).count()).toBe(0); // scrolled out of the rendered rows, still ticked
    expect(await axeViolations(page)).toEqual([]);

    // Live updates: one ticked row is deleted, another is resolved elsewhere (it leaves the filter).
    await untilSubscribed(app.service.url, 1);
    await sql('delete from dead_letters where id = $1', [beforeLast]);
    await t.db.deadLetterState.update({ where: { id: BigInt(second!) }, data: { status: 'RESOLVED' } });
    await checkbox(page, beforeLast).waitFor({ state: 'detached' });
    expect(await page.getByTestId('selected-count').innerText()).toBe('5 selected');

    await page.getByRole('button', { name: 'Act on 5 selected…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Act on 5 selected' });
    // A transform says up front which ticked rows it cannot reach.
    await dialog.getByRole('radio', { name: 'Transform payloads' }).click();
    await dialog.getByTestId('selected-left-out').getByText('2 of the 5 selected will not be transformed:').waitFor();
    expect(await dialog.getByTestId('selected-row').allInnerTexts()).toEqual([
      expect.stringMatching(new RegExp(`^${second}\\s+RESOLVED\\s+sel\\.page\\s+not eligible: no longer matches this list’s filter$`)),
      expect.stringMatching(new RegExp(`^${beforeLast}\\s+—\\s+—\\s+not eligible: no longer exists \\(deleted\\)$`)),
    ]);
    await dialog.getByRole('radio', { name: 'Resolve' }).click();
    await dialog.getByLabel(/Reason/).fill('handled by hand');
    await dialog.getByRole('button', { name: 'Preview (dry run)' }).click();
    const preview = dialog.getByTestId('preview');
    await preview.getByText('3 of the 5 selected will be resolved').waitFor();
    const listed = await dialog.getByTestId('selected-row').allInnerTexts();
    expect(listed.map((r) => r.split('\t').map((c) => c.trim()))).toEqual([
      [first, 'EXHAUSTED', 'sel.page', 'will be resolved'],
      [second, 'RESOLVED', 'sel.page', 'not eligible: no longer matches this list’s filter'],
      [third, 'EXHAUSTED', 'sel.page', 'will be resolved'],
      [last, 'EXHAUSTED', 'sel.page', 'will be resolved'],
      [beforeLast, '—', '—', 'not eligible: no longer exists (deleted)'],
    ]);
    expect(await preview.innerText()).toMatch(/1\s+RESOLVED\s+not eligible: no longer matches this list’s filter/);
    expect(await preview.innerText()).toMatch(/1\s+not eligible: no longer exists \(deleted\)/);
    expect(await axeViolations(page)).toEqual([]);
    expect((await sql(`select count(*)::int as n from dead_letters_current where status = 'RESOLVED'`)).rows[0].n).toBe(1);

    await dialog.getByRole('button', { name: 'Confirm resolve of 3' }).click();
    await dialog.getByTestId('bulk-done').getByText('Resolve: 3 dead letters changed.').waitFor();
    const resolved = await sql(`select c.id::text, c.resolution_reason from dead_letters_current c where c.status = 'RESOLVED' and c.id <> $1 order by c.id`, [second]);
    expect(resolved.rows).toEqual([last, third, first].map((id) => ({ id, resolution_reason: 'handled by hand' })));
    expect((await sql(`select count(*)::int as n from dead_letters_current where status = 'EXHAUSTED'`)).rows[0].n).toBe(150 - 1 - 1 - 3);
    await dialog.getByRole('button', { name: 'Close' }).click();
    await page.getByTestId('selected-count').waitFor({ state: 'detached' });
    await page.close();
  }, 120_000);

  it('works from the keyboard: j/k move, x and Space tick, Enter opens, / searches, and typing is left alone', async () => {
    for (const n of [1, 2, 3]) await insertDeadLetter(t.db, { eventType: 'sel.keys', status: 'EXHAUSTED', errorMessage: `refused ${n}` });
    const page = await app.open('/failures?type=sel.keys');
    await page.getByTestId('row').nth(2).waitFor();
    expect(await page.getByTestId('shortcuts').innerText()).toMatch(/j \/ k next \/ previous row.*x tick the row.*Enter open the event.*\/ search/s);
    const [top, middle] = await rowIds(page);
    const cursor = () => cursorId(page);

    await page.keyboard.press('j');
    expect(await cursor()).toBe(top);
    expect(await checkbox(page, top!).evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press('j');
    expect(await cursor()).toBe(middle);
    await page.keyboard.press('k');
    expect(await cursor()).toBe(top);
    await page.keyboard.press('x');
    await page.getByTestId('selected-count').getByText('1 selected').waitFor();
    await page.keyboard.press('j');
    await page.keyboard.press('Space');
    await page.getByTestId('selected-count').getByText('2 selected').waitFor();
    expect(await checkbox(page, middle!).isChecked()).toBe(true);
    expect(await page.locator(`tr[aria-selected="true"]`).count()).toBe(2);
    await page.keyboard.press('x');
    await page.getByTestId('selected-count').getByText('1 selected').waitFor();
    expect(await checkbox(page, middle!).isChecked()).toBe(false);
    expect(await axeViolations(page)).toEqual([]);

    // "/" goes to the search box; there every key is typing.
    await page.keyboard.press('/');
    expect(await isFocused(page, 'input[name="q"]')).toBe(true);
    await page.keyboard.type('jjkx/ refused');
    expect(await page.getByLabel('Error text').inputValue()).toBe('jjkx/ refused');
    expect(await cursor()).toBe(middle);
    expect(await page.getByTestId('selected-count').innerText()).toBe('1 selected');
    await page.getByLabel('Error text').fill('');

    // A click in the list (not on a link or a checkbox) leaves the search box; Enter opens the
    // cursor row's event; back on the list, the ticks are still there.
    await page.getByTestId('row').nth(2).getByRole('cell').nth(2).click();
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/failures/${middle}$`));
    await page.goBack();
    await page.getByTestId('selected-count').getByText('1 selected').waitFor();
    expect(await checkbox(page, top!).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'clear selection' }).click();
    await page.getByTestId('selected-count').waitFor({ state: 'detached' });
    expect(await checkbox(page, top!).isChecked()).toBe(false);

    // The header's checkbox ticks every loaded row, and unticks them.
    await page.getByRole('checkbox', { name: 'Select all loaded rows' }).click();
    await page.getByTestId('selected-count').getByText('3 selected').waitFor();
    await page.getByRole('checkbox', { name: 'Select all loaded rows' }).click();
    await page.getByTestId('selected-count').waitFor({ state: 'detached' });
    await page.close();
  }, 60_000);

  it('ticks rows in an error group’s members and requeues just those', async () => {
    const members = [];
    for (const n of [1, 2, 3]) members.push(await insertDeadLetter(t.db, { eventType: 'sel.group', status: 'EXHAUSTED', errorMessage: 'card declined', payload: { n } }));
    const chosen = String(members[1]!.id);
    const page = await app.open('/groups');
    // The service's folder makes the group; the list refetches when it does.
    await page.getByTestId('group-row').first().getByRole('link').first().click();
    await page.getByTestId('row').nth(2).waitFor();
    await checkbox(page, chosen).click();
    await page.getByRole('button', { name: 'Act on 1 selected…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Act on 1 selected' });
    await dialog.getByRole('button', { name: 'Preview (dry run)' }).click();
    await dialog.getByTestId('preview').getByText('1 of the 1 selected will be requeued').waitFor();
    expect(await dialog.getByTestId('selected-row').allInnerTexts()).toEqual([expect.stringMatching(new RegExp(`^${chosen}\\s+EXHAUSTED\\s+sel\\.group\\s+will be requeued$`))]);
    expect(await axeViolations(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Confirm requeue of 1' }).click();
    await dialog.getByTestId('bulk-done').waitFor();
    const statuses = await sql(`select c.id::text, c.status from dead_letters_current c where c.event_type = 'sel.group' order by c.id`);
    expect(statuses.rows).toEqual(members.map((m) => ({ id: String(m.id), status: String(m.id) === chosen ? 'PENDING' : 'EXHAUSTED' })));
    await page.close();
  }, 60_000);

  it('requeues ticked rows as a throttled redrive: only they are requeued, and the list forgets the ticks', async () => {
    const rows = [];
    for (const n of [1, 2, 3, 4]) rows.push(await insertDeadLetter(t.db, { eventType: 'sel.redrive', status: 'EXHAUSTED', errorMessage: `timeout ${n}` }));
    const [a, , b] = rows.map((r) => String(r.id));
    const page = await app.open('/failures?type=sel.redrive');
    await page.getByTestId('row').nth(3).waitFor();
    await checkbox(page, a!).click();
    await checkbox(page, b!).click();
    await page.getByRole('button', { name: 'Act on 2 selected…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Act on 2 selected' });
    await dialog.getByLabel(/Rate/).fill('10');
    await dialog.getByRole('button', { name: 'Preview (dry run)' }).click();
    await dialog.getByTestId('preview').getByText('2 of the 2 selected will be requeued').waitFor();
    await dialog.getByRole('button', { name: 'Confirm requeue of 2' }).click();

    await page.waitForURL(/\/redrives\/\d+$/);
    await page.getByRole('heading', { name: /REQUEUED/ }).waitFor();
    expect(await page.getByTestId('redrive-summary').innerText()).toMatch(/^Requeued all 2 — /);
    const statuses = await sql(`select c.id::text, c.status from dead_letters_current c where c.event_type = 'sel.redrive' order by c.id`);
    expect(statuses.rows).toEqual(rows.map((r) => ({ id: String(r.id), status: [a, b].includes(String(r.id)) ? 'PENDING' : 'EXHAUSTED' })));
    await page.goBack();
    await page.getByTestId('row').nth(3).waitFor();
    expect(await page.getByTestId('selected-count').count()).toBe(0);
    expect(await checkbox(page, a!).isChecked()).toBe(false);
    await page.close();
  }, 60_000);
});
