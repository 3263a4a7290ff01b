// GraphiQL in a real headless Chromium: the page loads with no network but our own server (so
// its assets are served locally), shows the example operations, and runs one.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, VIEWPORT } from './helpers/browser.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { testServer } from './helpers/graphql.ts';
import { startLiveServer } from './helpers/live.ts';

const t = useTestDatabase();
let browser: Browser;
let http: Server;
let baseUrl: string;

beforeAll(async () => {
  const yoga = testServer(t.db, { graphiql: true });
  http = createServer(yoga).listen(0, '127.0.0.1');
  await once(http, 'listening');
  baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  http?.close();
});

describe('GraphiQL', () => {
  it('loads only from this server, preloads the example operations, and runs one', async () => {
    const row = await insertDeadLetter(t.db, { eventType: 'order.placed' });
    const page = await browser.newPage();
    const foreign: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(baseUrl) && !request.url().startsWith('data:') && !request.url().startsWith('blob:')) foreign.push(request.url());
    });

    await page.goto(`${baseUrl}/graphql`);
    await page.getByText('LatestDeadLetters').first().waitFor();
    const tabs = await page.locator('.graphiql-tab').allInnerTexts();
    await page.locator('.graphiql-execute-button').click();
    await page.locator('.graphiql-response').getByText(row.id.toString()).first().waitFor();
    // The editor renders spaces as no-break spaces; compare on normalised whitespace.
    const response = (await page.locator('.graphiql-response').innerText()).replace(/\s+/g, ' ');

    expect(foreign).toEqual([]);
    expect(tabs.join(' ')).toMatch(/LatestDeadLetters[\s\S]*DeadLetter/);
    expect(response).toContain('"totalCount": 1');
    expect(response).toContain('order.placed');
  });

  it('switches tabs on a real mouse click, once the tab strip has settled', async () => {
    const page = await browser.newPage({ viewport: VIEWPORT });
    page.setDefaultTimeout(15_000); // a tab that never switches fails with its locator, inside the test's timeout
    try {
      await page.goto(`${baseUrl}/graphql`);
      const tabs = page.locator('button.graphiql-tab-button');
      await tabs.nth(11).waitFor();
      // Once the strip has settled, framer-motion writes each tab's drag offset into its style.
      await page.locator('li.graphiql-tab[style*="transform"]').first().waitFor({ state: 'attached' });
      for (const title of ['DeadLetter', 'LatestDeadLetters']) {
        const tab = page.locator(`button.graphiql-tab-button[title="${title}"]`);
        const box = (await tab.boundingBox())!;
        // A press and a release at the tab's middle, as a person's mouse does.
        await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
        await page.locator('li.graphiql-tab-active', { has: tab }).waitFor();
        expect(await page.locator('li.graphiql-tab-active').innerText()).toBe(title);
      }
    } finally {
      await page.close();
    }
  });

  it('runs the preloaded subscription tab and shows an event that a plain SQL INSERT produced', async () => {
    const live = await startLiveServer({ databaseUrl: t.url, db: t.db, graphiql: true });
    const page = await browser.newPage();
    try {
      await page.goto(live.url);
      const tab = page.locator('button.graphiql-tab-button[title="DeadLetterChanges"]');
      await tab.click();
      await page.locator('li.graphiql-tab-active', { has: tab }).waitFor();
      // The editor swaps in the tab's document a moment after the tab turns active (under load,
      // an execute in between ran the previous tab's operation name against it).
      await page.locator('.graphiql-query-editor', { hasText: /subscription\s+DeadLetterChanges/ }).waitFor();
      // GraphiQL takes the document's operation name in a debounced change handler (100 ms), which
      // first stores the query: until then an execute sends the previous tab's operation name
      // ("Cannot infer operation LatestDeadLetters").
      await page.waitForFunction(() => /subscription\s+DeadLetterChanges/.test(localStorage.getItem('graphiql:query') ?? ''));
      await page.locator('.graphiql-execute-button').click();
      // Subscribed once the feed has a listener: only then is a new row this tab's to see.
      for (const deadline = Date.now() + 15_000; live.feed.events.listenerCount() === 0;) {
        if (Date.now() > deadline) throw new Error(`GraphiQL never subscribed; it shows: ${await page.locator('.graphiql-response').innerText()}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await t.handle.pool.query(`insert into dead_letters (event_type, payload, error_message) values ('invoice.sent', '{"n": 1}', 'from psql')`);

      await page.locator('.graphiql-response').getByText('invoice.sent').first().waitFor({ timeout: 15_000 });
      const response = (await page.locator('.graphiql-response').innerText()).replace(/\s+/g, ' ');

      expect(response).toContain('"isNew": true');
      expect(response).not.toContain('CSRF');
    } finally {
      await page.close();
      await live.close();
    }
  });
});

