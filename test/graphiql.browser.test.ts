// GraphiQL in a real headless Chromium: the page loads with no network but our own server (so
// its assets are served locally), shows the example operations, and runs one.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './helpers/browser.ts';
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

  it('runs the preloaded subscription tab and shows an event that a plain SQL INSERT produced', async () => {
    const live = await startLiveServer({ databaseUrl: t.url, db: t.db, graphiql: true });
    const page = await browser.newPage();
    try {
      await page.goto(live.url);
      const tab = page.locator('button.graphiql-tab-button[title="DeadLetterChanges"]');
      // The tab strip animates into place after load; a click is taken once the tab is selected.
      await tab.dispatchEvent('click');
      await page.locator('li.graphiql-tab-active', { has: tab }).waitFor();
      // The editor swaps in the tab's document a moment after the tab turns active (under load,
      // an execute in between ran the previous tab's operation name against it).
      await page.locator('.graphiql-query-editor', { hasText: /subscription\s+DeadLetterChanges/ }).waitFor();
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

