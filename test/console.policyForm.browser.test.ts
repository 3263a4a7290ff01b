// The retry policy form saves what it shows: each field shows its default (the "*" policy's value),
// a field left blank saves that default (never 0 or an empty list), a typed value saves that value,
// and a field cleared again goes back to the default. One test per field, in a real Chromium against
// the real service, each checked in the database.
import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { axeViolations, screenshot } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();
// No retry loop: these tests look at what is saved, and no delivery may start.
const app = useConsole(t, { RETRY_ENABLED: 'false' });

const sql = (text: string, values: unknown[] = []) => t.handle.pool.query(text, values);
// Defaults unlike the built-in ones, so a saved default is told apart from a column default.
beforeEach(async () => {
  await sql(`update retry_policies set max_attempts = 7, backoff = 'LINEAR', base_delay_ms = 250, max_delay_ms = 9000, timeout_ms = 4000,
    concurrency = 3, permanent_status_codes = '{409,422}', permanent_error_kinds = '{VALIDATION}', ordered = true, allow_private_target = true,
    paused = false, target_kind = null, target_settings = null where event_type = '*'`);
});
const policyRow = async (eventType: string) => (await sql('select * from retry_policies where event_type = $1', [eventType])).rows[0];

async function openForm(eventType: string | null): Promise<Page> {
  const page = await app.open('/policies');
  if (eventType === null) await page.getByRole('button', { name: 'New policy for an event type' }).click();
  else await page.getByRole('button', { name: `Edit ${eventType}`, exact: true }).click();
  await page.getByRole('form').waitFor();
  return page;
}
async function save(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Save policy' }).click();
  await page.getByRole('form').waitFor({ state: 'detached' });
  await page.close();
}
async function create(eventType: string, fill?: (page: Page) => Promise<void>): Promise<void> {
  const page = await openForm(null);
  await page.getByLabel('Event type').fill(eventType);
  await fill?.(page);
  await save(page);
}

interface TextField {
  label: string;
  column: string;
  /** What the form shows as the default. */
  shown: string;
  saved: unknown;
  typed: string;
  typedSaved: unknown;
}
const TEXT_FIELDS: TextField[] = [
  { label: 'Max attempts', column: 'max_attempts', shown: '7', saved: 7, typed: '4', typedSaved: 4 },
  { label: 'Base delay (ms)', column: 'base_delay_ms', shown: '250', saved: 250, typed: '500', typedSaved: 500 },
  { label: 'Max delay (ms)', column: 'max_delay_ms', shown: '9000', saved: 9000, typed: '60000', typedSaved: 60000 },
  { label: 'Timeout (ms)', column: 'timeout_ms', shown: '4000', saved: 4000, typed: '2500', typedSaved: 2500 },
  { label: 'Concurrency (in flight)', column: 'concurrency', shown: '3', saved: 3, typed: 'unlimited', typedSaved: null },
  { label: 'Permanent HTTP status codes', column: 'permanent_status_codes', shown: '409, 422', saved: [409, 422], typed: 'none', typedSaved: [] },
  { label: 'Permanent error kinds', column: 'permanent_error_kinds', shown: 'VALIDATION', saved: '{VALIDATION}', typed: 'timeout, crash', typedSaved: '{TIMEOUT,CRASH}' },
];

describe('the policy form saves what it shows', () => {
  it.each(TEXT_FIELDS)('$label: blank saves the default it shows, a value saves that value, cleared saves the default again', async (f) => {
    const type = `form.${f.column}`;
    const page = await openForm(null);
    await page.getByLabel('Event type').fill(type);
    const input = page.getByLabel(f.label);
    expect(await input.inputValue()).toBe('');
    expect(await input.getAttribute('placeholder')).toBe(f.shown);
    const hint = page.locator(`#${await input.getAttribute('name')}-default`);
    expect(await hint.innerText()).toContain(`blank saves the default ${f.shown}`);
    await save(page);
    expect((await policyRow(type))[f.column]).toEqual(f.saved);

    const edit = await openForm(type);
    expect(await edit.getByLabel(f.label).inputValue()).toBe(f.shown);
    await edit.getByLabel(f.label).fill(f.typed);
    await save(edit);
    expect((await policyRow(type))[f.column]).toEqual(f.typedSaved);

    const again = await openForm(type);
    // What was saved is what the field shows.
    expect(await again.getByLabel(f.label).inputValue()).toBe(f.typed === 'timeout, crash' ? 'TIMEOUT, CRASH' : f.typed);
    await again.getByLabel(f.label).fill('');
    await save(again);
    expect((await policyRow(type))[f.column]).toEqual(f.saved);
  });

  it('Backoff: "Default" saves the default it names, a choice saves that choice', async () => {
    const page = await openForm(null);
    await page.getByLabel('Event type').fill('form.backoff');
    expect(await page.getByRole('combobox', { name: /^Backoff/ }).locator('option:checked').innerText()).toBe('Default (LINEAR)');
    await save(page);
    expect((await policyRow('form.backoff')).backoff).toBe('LINEAR');
    const edit = await openForm('form.backoff');
    await edit.getByRole('combobox', { name: /^Backoff/ }).selectOption('FIXED');
    await save(edit);
    expect((await policyRow('form.backoff')).backoff).toBe('FIXED');
    const again = await openForm('form.backoff');
    await again.getByRole('combobox', { name: /^Backoff/ }).selectOption({ label: 'Default (LINEAR)' });
    await save(again);
    expect((await policyRow('form.backoff')).backoff).toBe('LINEAR');
  });

  it.each([
    { label: 'ordered per ordering key', column: 'ordered' },
    { label: 'allow a private-network target', column: 'allow_private_target' },
  ])('$label: starts as the default policy has it, and saves what is ticked', async (f) => {
    const type = `form.${f.column}`;
    const page = await openForm(null);
    await page.getByLabel('Event type').fill(type);
    expect(await page.getByLabel(f.label).isChecked()).toBe(true);
    await save(page);
    expect((await policyRow(type))[f.column]).toBe(true);
    const edit = await openForm(type);
    await edit.getByLabel(f.label).uncheck();
    await save(edit);
    expect((await policyRow(type))[f.column]).toBe(false);
  });

  it('Delivery target: none saves no target, a kind saves its settings, none again removes it', async () => {
    await create('form.target');
    expect((await policyRow('form.target')).target_kind).toBeNull();
    const edit = await openForm('form.target');
    await edit.getByLabel('Delivery target').selectOption({ label: 'Webhook (HTTP POST)' });
    await edit.getByLabel('Webhook URL').fill('http://127.0.0.1:9/hook');
    await save(edit);
    expect(await policyRow('form.target')).toMatchObject({ target_kind: 'webhook', target_settings: { url: 'http://127.0.0.1:9/hook' } });
    const again = await openForm('form.target');
    expect(await again.getByLabel('Webhook URL').inputValue()).toBe('http://127.0.0.1:9/hook');
    await again.getByLabel('Delivery target').selectOption({ label: 'None (in-process handler, else held)' });
    await save(again);
    expect(await policyRow('form.target')).toMatchObject({ target_kind: null, target_settings: null });
  });

  it('Event type: blank is refused by name and nothing is saved', async () => {
    const page = await openForm(null);
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.locator('#eventType-error').waitFor();
    expect(await page.getByLabel('Event type').getAttribute('aria-invalid')).toBe('true');
    expect((await sql('select count(*)::int as n from retry_policies')).rows[0].n).toBe(1);
  });

  it('refuses a value it cannot read at its field, saves nothing, and shows every default', async () => {
    const page = await openForm(null);
    await page.getByLabel('Event type').fill('form.bad');
    await page.getByLabel('Concurrency (in flight)').fill('lots');
    await page.getByLabel('Permanent HTTP status codes').fill('422, teapot');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.locator('#concurrency-error').waitFor();
    expect(await page.getByLabel('Concurrency (in flight)').getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Concurrency (in flight)').fill('');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.locator('#permanentStatusCodes-error').getByText('"teapot" is not an HTTP status code').waitFor();
    expect(await policyRow('form.bad')).toBeUndefined();
    await screenshot(page, 'policy-form-defaults');
    expect(await axeViolations(page)).toEqual([]);
  });
});
