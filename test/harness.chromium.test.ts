// What `npm test` does about Chromium before the browser tests run (test/globalSetupChromium.ts).
import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHROMIUM_PATH, isBrowserTestFile, planChromium, type ChromiumFacts } from './helpers/planChromium.ts';

const freshDebianRoot: ChromiumFacts = { chromiumPath: DEFAULT_CHROMIUM_PATH, hasChromium: false, isRoot: true, hasAptGet: true, browserFiles: 5 };
const WHAT_TO_INSTALL = '5 browser test files in this run need Chromium and /usr/bin/chromium is missing: install it (apt-get install chromium) or set CHROMIUM_PATH to a Chromium binary';

describe('the Chromium step before the browser tests', () => {
  it('installs Debian’s package once when Chromium is missing and the run is root with apt-get', () => {
    expect(planChromium(freshDebianRoot)).toEqual({
      action: 'install',
      line: '5 browser test files in this run need Chromium and /usr/bin/chromium is missing: installing it once (apt-get install chromium)',
    });
  });

  it('stops the run with one line saying what to install when not root', () => {
    expect(planChromium({ ...freshDebianRoot, isRoot: false })).toEqual({ action: 'fail', line: WHAT_TO_INSTALL });
  });

  it('stops the run with one line saying what to install when there is no apt-get', () => {
    expect(planChromium({ ...freshDebianRoot, hasAptGet: false })).toEqual({ action: 'fail', line: WHAT_TO_INSTALL });
  });

  it('does not install over a CHROMIUM_PATH that points elsewhere, since apt would not fill it', () => {
    expect(planChromium({ ...freshDebianRoot, chromiumPath: '/opt/chrome/chrome', browserFiles: 1 })).toEqual({
      action: 'fail',
      line: '1 browser test file in this run needs Chromium and /opt/chrome/chrome is missing: install it (apt-get install chromium) or set CHROMIUM_PATH to a Chromium binary',
    });
  });

  it('proceeds when Chromium is there, or when no browser test is in the run', () => {
    expect(planChromium({ ...freshDebianRoot, hasChromium: true })).toEqual({ action: 'proceed' });
    expect(planChromium({ ...freshDebianRoot, isRoot: false, hasAptGet: false, browserFiles: 0 })).toEqual({ action: 'proceed' });
  });

  it('is described in the README with the true number of browser tests and files', async () => {
    const files = (await readdir(new URL('./', import.meta.url))).filter(isBrowserTestFile);
    const texts = await Promise.all(files.map((f) => readFile(new URL(f, import.meta.url), 'utf8')));
    const tests = texts.reduce((sum, text) => sum + text.match(/^\s*it\(/gm)!.length, 0);
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const stated = readme.match(/(\w+) tests? in (\w+) files? \(`test\/\*\.browser\.test\.ts`\)/);
    expect(stated?.slice(1)).toEqual([String(tests), String(files.length)]);
  });
});
