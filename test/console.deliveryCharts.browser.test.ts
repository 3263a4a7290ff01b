// The delivery charts in a real headless Chromium against the real service: per event type on the
// overview, per target on the Targets view, the hour/day switch and the nav link clicked with the
// mouse, figures that follow new attempts without a reload, and no serious accessibility problem.
import { describe, expect, it } from 'vitest';
import { axeViolations, screenshot } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();
const app = useConsole(t, { RETRY_ENABLED: 'false' }, { timeoutMs: 15_000 });

/** `n` events of `eventType`, each with attempts to `target` over the last `minutes`; every 4th fails. */
async function deliveries(eventType: string, target: string, n: number, opts: { minutes?: number; hoursAgo?: number; durationMs?: number } = {}) {
  await t.handle.pool.query(
    `with e as (insert into dead_letters (event_type, error_message) select $1, 'boom' from generate_series(1, $3::int) returning id)
     insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome, target, status_code)
     select e.id, 1, 'w', now() - $5::int * interval '1 hour' - (e.id % $4::int) * interval '1 minute', $6::int + (e.id % 10) * 7,
            case when e.id % 4 = 0 then 'FAILED' else 'SUCCEEDED' end::"AttemptOutcome", $2, case when e.id % 4 = 0 then 503 else 200 end
       from e`,
    [eventType, target, n, opts.minutes ?? 50, opts.hoursAgo ?? 0, opts.durationMs ?? 80],
  );
}

describe('delivery charts', () => {
  it('show per event type on the overview and per target on Targets, switch hour and day with the mouse, and follow new attempts', async () => {
    await deliveries('order.placed', 'orders.example.com', 120);
    await deliveries('invoice.sent', 'billing.example.com', 40, { durationMs: 900 });
    await deliveries('refund.issued', 'billing.example.com', 30, { hoursAgo: 5 });

    const page = await app.open('/');
    const charts = page.getByTestId('delivery-charts-EVENT_TYPE');
    const rows = charts.getByTestId('delivery-row');
    await rows.first().waitFor();
    expect(await rows.allInnerTexts()).toEqual([
      expect.stringMatching(/^order\.placed\s+120\s+2\.00\s+75\.0%\s+\d+ ms\s+\d+ ms$/),
      expect.stringMatching(/^invoice\.sent\s+40\s+0\.67\s+75\.0%\s+9\d\d ms\s+9\d\d ms$/),
    ]);
    expect(await charts.getByRole('img').getAttribute('aria-label')).toMatch(/last hour, in steps of 1 min/);
    await screenshot(page, 'overview-deliveries');

    // The day includes the refunds of five hours ago.
    await charts.getByRole('button', { name: 'Last 24 h' }).click();
    await rows.filter({ hasText: 'refund.issued' }).waitFor();
    expect(await charts.getByRole('button', { name: 'Last 24 h' }).getAttribute('aria-pressed')).toBe('true');
    expect(await charts.getByRole('img').getAttribute('aria-label')).toMatch(/last 24 h, in steps of 15 min/);
    expect(await rows.count()).toBe(3);
    await charts.getByRole('button', { name: 'Last hour' }).click();
    await expect.poll(() => rows.count()).toBe(2);

    // Live: new attempts move the counts, and the overview re-reads its charts.
    await deliveries('order.placed', 'orders.example.com', 8, { minutes: 1 });
    await expect.poll(() => rows.allInnerTexts(), { timeout: 15_000 }).toContainEqual(expect.stringMatching(/^order\.placed\s+128\s/));
    expect(await axeViolations(page)).toEqual([]);

    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Targets' }).click();
    await page.getByRole('heading', { name: 'Targets', level: 1 }).waitFor();
    const targets = page.getByTestId('delivery-charts-TARGET').getByTestId('delivery-row');
    await targets.first().waitFor();
    expect((await targets.allInnerTexts()).map((r) => r.split(/\s+/).slice(0, 2))).toEqual([['orders.example.com', '128'], ['billing.example.com', '40']]);
    await page.getByRole('button', { name: 'Last 24 h' }).click();
    await expect.poll(() => targets.allInnerTexts(), { timeout: 15_000 }).toContainEqual(expect.stringMatching(/^billing\.example\.com\s+70\s/));
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'targets');
    await page.close();
  });
});
