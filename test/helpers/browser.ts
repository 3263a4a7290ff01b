// Headless Debian Chromium through playwright-core, axe-core checks, and console screenshots.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { DEFAULT_CHROMIUM_PATH } from './planChromium.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? DEFAULT_CHROMIUM_PATH;
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
/** Where screenshots go: set CONSOLE_SCREENSHOTS=docs/console to refresh the committed ones. */
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS;

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: install it (apt-get install chromium) or set CHROMIUM_PATH`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Serious and critical accessibility violations on the page as it is now. */
export async function axeViolations(page: Page): Promise<{ id: string; impact: string; nodes: string[] }[]> {
  await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export async function screenshot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: `${SCREENSHOTS}/${name}.png` });
}

export const VIEWPORT = { width: 1440, height: 900 };

/** Replaces all the text of a CodeMirror editor as a person would: click into it, select all, type. */
export async function replaceEditorText(editor: Locator, text: string): Promise<void> {
  await editor.click();
  await editor.page().keyboard.press('Control+A');
  await editor.page().keyboard.insertText(text);
}
