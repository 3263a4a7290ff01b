#!/usr/bin/env node
// The `lazarus` command (src/cli/lazarus.ts). Needs Node 24 (type stripping): `npx lazarus …`
// uses the one npm install put in node_modules/.bin.
const { run } = await import('../src/cli/lazarus.ts');
process.exitCode = await run(process.argv.slice(2));
