/** Where the browser tests look for Chromium: Debian's package path unless CHROMIUM_PATH says otherwise. */
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

export type ChromiumPlan = { action: 'proceed' } | { action: 'install'; line: string } | { action: 'fail'; line: string };

export interface ChromiumFacts {
  chromiumPath: string;
  hasChromium: boolean;
  isRoot: boolean;
  hasAptGet: boolean;
  /** How many `*.browser.test.ts` files this run will execute. */
  browserFiles: number;
}

export function isBrowserTestFile(path: string): boolean {
  return path.endsWith('.browser.test.ts');
}

/**
 * What the run does about Chromium before any test file starts: nothing when no browser test runs
 * or Chromium is there; install Debian's package when we can (root, apt-get, the default path);
 * otherwise stop with one line that says what to install.
 */
export function planChromium(facts: ChromiumFacts): ChromiumPlan {
  if (facts.browserFiles === 0 || facts.hasChromium) return { action: 'proceed' };
  const why = `${facts.browserFiles} browser test file${facts.browserFiles === 1 ? '' : 's'} in this run need${facts.browserFiles === 1 ? 's' : ''} Chromium and ${facts.chromiumPath} is missing`;
  // An apt install only ever fills the default path, so a CHROMIUM_PATH elsewhere is the user's to fix.
  if (facts.chromiumPath === DEFAULT_CHROMIUM_PATH && facts.isRoot && facts.hasAptGet) {
    return { action: 'install', line: `${why}: installing it once (apt-get install chromium)` };
  }
  return { action: 'fail', line: `${why}: install it (apt-get install chromium) or set CHROMIUM_PATH to a Chromium binary` };
}
