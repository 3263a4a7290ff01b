// The console test files' set-up: the real service on the file's test database, serving the built
// console, and a headless Chromium to open its pages. Hooks run beforeAll in the order registered
// and afterAll in reverse (vitest's `sequence.hooks: 'stack'`), so a file registers what the
// service's environment needs (a receiver, a vhost) before calling useConsole, and that closes
// after the console.
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startService, type RunningService } from '../../src/service.ts';
import { launchChromium, VIEWPORT } from './browser.ts';
import type { TestDatabase } from './db.ts';
import { silentLogger } from './retry.ts';

export interface ConsoleHarness {
  /** Set once the file's beforeAll hooks have run. */
  readonly browser: Browser;
  readonly service: RunningService;
  /**
   * A new page at `path` on the service (or on `base`, another service's URL), with the file's
   * default timeout unless `timeoutMs` is given. Without either, Playwright's own (30 s).
   */
  open(path: string, options?: { base?: string; timeoutMs?: number }): Promise<Page>;
}

/**
 * A real service on the file's test database and a headless Chromium, for one console test file.
 * `env` is added to the service's environment; as a function it is read in the helper's beforeAll,
 * after the file's own earlier ones (for values those make, such as a vhost's URL).
 */
export function useConsole(
  t: TestDatabase,
  env: Record<string, string> | (() => Record<string, string>) = {},
  options: { timeoutMs?: number } = {},
): ConsoleHarness {
  let browser: Browser | undefined;
  let service: RunningService | undefined;

  beforeAll(async () => {
    if (!existsSync(new URL('../../web/dist/index.html', import.meta.url))) throw new Error('the console is not built: run `npm run build:web` (npm install does it)');
    browser = await launchChromium();
    const extra = typeof env === 'function' ? env() : env;
    service = await startService(loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, ...extra }), silentLogger);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  const harness: ConsoleHarness = {
    get browser() {
      if (!browser) throw new Error('useConsole: Chromium is not launched yet (read it in a test or a later hook)');
      return browser;
    },
    get service() {
      if (!service) throw new Error('useConsole: the service is not started yet (read it in a test or a later hook)');
      return service;
    },
    async open(path, o = {}) {
      const page = await harness.browser.newPage({ viewport: VIEWPORT });
      const timeoutMs = o.timeoutMs ?? options.timeoutMs;
      if (timeoutMs !== undefined) page.setDefaultTimeout(timeoutMs); // a missing element fails with its locator, inside the test's timeout
      await page.goto(`${o.base ?? harness.service.url}${path}`);
      return page;
    },
  };
  return harness;
}
