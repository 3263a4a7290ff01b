// Makes sure the browser tests have Chromium before any test file starts: installs Debian's package
// once per run where we can, or stops the run with one line instead of a stack trace per test.
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { DEFAULT_CHROMIUM_PATH, isBrowserTestFile, planChromium } from './helpers/planChromium.ts';

const APT_GET = '/usr/bin/apt-get';
/** Serialises installs between suites running side by side; apt's own lock covers anyone else. */
const INSTALL_LOCK = '/var/lock/lazarus-test-chromium.lock';
const LOCK_WAIT_SECONDS = 900;
// `apt-get update` does not honour DPkg::Lock::Timeout for the lists lock, hence flock around both
// steps; the re-check inside means the second suite finds the first one's install and does nothing.
const INSTALL_SCRIPT = `[ -x "$1" ] && exit 0
apt-get -qq -o DPkg::Lock::Timeout=600 update
DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=600 install -y chromium`;

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

// A throw here makes vitest print "No test files found", its filters and an "Unhandled Error"
// around the line. This setup runs first, so nothing is started yet that exiting would leak.
function stopRun(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

async function installChromium(chromiumPath: string): Promise<void> {
  try {
    await promisify(execFile)('flock', ['-w', String(LOCK_WAIT_SECONDS), INSTALL_LOCK, 'sh', '-e', '-c', INSTALL_SCRIPT, 'sh', chromiumPath], { maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '').trim().split('\n').at(-1);
    stopRun(`installing Chromium failed (apt-get install chromium): ${stderr || (error as Error).message}`);
  }
  if (!isExecutable(chromiumPath)) stopRun(`apt-get install chromium finished but ${chromiumPath} is still missing`);
}

export default async function setup(project: TestProject) {
  const chromiumPath = process.env.CHROMIUM_PATH ?? DEFAULT_CHROMIUM_PATH;
  const plan = planChromium({
    chromiumPath,
    hasChromium: isExecutable(chromiumPath),
    isRoot: process.getuid?.() === 0,
    hasAptGet: isExecutable(APT_GET),
    // The files this run will execute (vitest collects them before global setup).
    browserFiles: project.vitest.state.getPaths().filter(isBrowserTestFile).length,
  });
  if (plan.action === 'proceed') return;
  if (plan.action === 'fail') stopRun(plan.line);
  process.stdout.write(`${plan.line}\n`);
  await installChromium(chromiumPath);
}
