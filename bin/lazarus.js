#!/usr/bin/env node
// The `lazarus` command (src/cli/lazarus.ts). It is TypeScript, so it needs a Node that strips types
// (Node 24). Run by an older one (the system's Node 20, say), it hands over to the Node 24 that
// npm install put in node_modules/.bin, so `bin/lazarus.js …` works from any shell in 0.3 s.
// (`npx lazarus` works too, but npx first installs this project into its own cache, running our
// postinstall build: about 90 s on the first run, 8 s on later ones.)
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

if (process.features.typescript) {
  const { run } = await import('../src/cli/lazarus.ts');
  process.exitCode = await run(process.argv.slice(2));
} else {
  const node = fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url));
  // The marker stops a loop when that Node cannot strip types either (NODE_OPTIONS turned it off).
  if (!existsSync(node) || process.env.LAZARUS_CLI_HANDED_OVER) {
    process.stderr.write(`lazarus: needs a Node that strips TypeScript types (Node 24 without --no-experimental-strip-types); this is ${process.version}\n`);
    process.exit(2);
  }
  const child = spawn(node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, LAZARUS_CLI_HANDED_OVER: '1' } });
  // Ctrl-C reaches the child from the terminal itself; a SIGTERM sent to us alone is passed on.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => child.kill('SIGTERM'));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
}
