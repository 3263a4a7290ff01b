// Issue 35 item 8, look and feel (docs/console/look-and-feel.md): a state has its own colour and
// shape and always its word; the groups list shows the error's first stack frame; the lists are dense.
// Real Chromium against the real service on a real PostgreSQL.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { axeViolations, screenshot } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';

const t = useTestDatabase();
const app = useConsole(t, { RETRY_ENABLED: 'false' }, { timeoutMs: 15_000 });

const STATUSES = ['PENDING', 'PROCESSING', 'EXHAUSTED', 'SUCCEEDED', 'RESOLVED', 'DISCARDED'] as const;

/** What a badge shows: its word, its colours and the shape before the word. */
const looksOf = (page: Page, selector: string) => page.locator(selector).evaluateAll((badges) => badges.map((b) => {
  const style = getComputedStyle(b);
  return { text: (b as HTMLElement).innerText, background: style.backgroundColor, color: style.color, shape: getComputedStyle(b, '::before').content.replace(/ \/ ""$/, '') };
}));

describe('console look and feel', () => {
  it('gives every status its own colour and shape beside its word, in the list and on the event page, and stays accessible', async () => {
    const ids: Record<string, bigint> = {};
    for (const status of STATUSES) {
      const done = ['SUCCEEDED', 'RESOLVED', 'DISCARDED'].includes(status);
      const row = await insertDeadLetter(t.db, {
        status, eventType: `state.${status.toLowerCase()}`, nextAttemptAt: status === 'PENDING' ? new Date() : null,
        ...(status === 'PROCESSING' && { leaseOwner: 'w', leaseToken: crypto.randomUUID(), leaseExpiresAt: new Date(Date.now() + 3_600_000) }),
        ...(done && { resolvedAt: new Date() }),
      });
      ids[status] = row.id;
    }
    const list = await app.open('/failures');
    await list.getByTestId('row').nth(STATUSES.length - 1).waitFor();
    const badges = await looksOf(list, '[data-testid="row"] .badge:not(.held)');
    expect(badges.map((b) => b.text).sort()).toEqual([...STATUSES].sort());
    // Six states, six backgrounds and six shapes: telling two apart never rests on one cue.
    expect(new Set(badges.map((b) => b.background)).size).toBe(STATUSES.length);
    expect(new Set(badges.map((b) => b.shape)).size).toBe(STATUSES.length);
    const succeeded = badges.find((b) => b.text === 'SUCCEEDED')!;
    const exhausted = badges.find((b) => b.text === 'EXHAUSTED')!;
    expect(exhausted.background).not.toBe(succeeded.background);
    expect(exhausted.color).not.toBe(succeeded.color);
    expect([exhausted.shape, succeeded.shape]).toEqual(['"✕"', '"✓"']);
    // Dense rows: 28 px each, one line.
    const heights = await list.getByTestId('row').evaluateAll((rows) => rows.map((r) => r.getBoundingClientRect().height));
    expect(new Set(heights)).toEqual(new Set([28]));
    // A held PENDING event's two badges fit their cell whole.
    const pending = list.getByTestId('row').filter({ hasText: 'state.pending' }).locator('td').nth(1);
    expect(await pending.innerText()).toBe('PENDING held: no target');
    expect(await pending.evaluate((td) => td.scrollWidth <= td.clientWidth)).toBe(true);
    await screenshot(list, 'look-and-feel/after-states');
    expect(await axeViolations(list)).toEqual([]);

    const event = await app.open(`/failures/${ids.EXHAUSTED}`);
    await event.getByRole('heading', { name: new RegExp(`Dead letter ${ids.EXHAUSTED}`) }).waitFor();
    const [heading] = await looksOf(event, 'h1 .badge:not(.held)');
    expect(heading).toEqual(exhausted);
    expect(await axeViolations(event)).toEqual([]);
  });

  it('shows under each group’s message its first stored stack frame, or its error’s first line, in colour-coded, dense rows', async () => {
    await insertDeadLetter(t.db, {
      status: 'EXHAUSTED', eventType: 'payment.captured', errorMessage: 'HTTP 502 from psp (request 77)',
      errorStack: 'Error: HTTP 502 from psp (request 77)\n    at capture (/app/src/payments/capture.ts:118:13)\n    at main (/app/src/index.ts:9:3)',
    });
    await insertDeadLetter(t.db, { status: 'EXHAUSTED', eventType: 'invoice.sent', errorMessage: 'SMTP relay refused (id 4417)\nsecond line' });
    const list = await app.open('/groups');
    await list.getByTestId('group-row').nth(1).waitFor();
    const headlines = await list.getByTestId('group-headline').allInnerTexts();
    expect(headlines.sort()).toEqual(['SMTP relay refused (id 4417)', 'at capture (/app/src/payments/capture.ts:118:13)']);
    const badges = await looksOf(list, '[data-testid="group-row"] .badge');
    expect(badges.map((b) => [b.text, b.shape])).toEqual([['OPEN', '"✕"'], ['OPEN', '"✕"']]);
    await screenshot(list, 'look-and-feel/after-groups');
    expect(await axeViolations(list)).toEqual([]);
  });
});
