// A bridge runner's view of bridge_states (src/workers/bridges/pauseState.ts), on the real database.
import { describe, expect, it } from 'vitest';
import { setBridgePaused } from '../src/db/models/bridgeStates.ts';
import { createPauseState } from '../src/workers/bridges/pauseState.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();

describe('the pause state a bridge runner reads', () => {
  it('waits for the answer when starting, poked or paused, and reads beside the batches while running', async () => {
    const pause = createPauseState(t.db, 'orders', 0);
    expect(await pause.read()).toBe(false);

    // Paused through another instance: a running bridge learns it from its read in the background.
    await setBridgePaused(t.db, 'orders', true, 'elsewhere');
    expect(await pause.read()).toBe(false);
    await pause.settled();
    expect(await pause.read()).toBe(true);

    // Paused, it waits for each answer: a resume shows at the next read.
    await setBridgePaused(t.db, 'orders', false, 'elsewhere');
    expect(await pause.read()).toBe(false);

    // Through this instance (a poke), the next read waits for a fresh answer even while running.
    const slow = createPauseState(t.db, 'orders', 60_000);
    expect(await slow.read()).toBe(false);
    await setBridgePaused(t.db, 'orders', true, 'local');
    expect(await slow.read()).toBe(false);
    slow.poke();
    expect(await slow.read()).toBe(true);
  });

  it('throws a failed background read from the next read, then reads again', async () => {
    const pause = createPauseState(t.db, 'orders', 0);
    expect(await pause.read()).toBe(false);
    await t.db.$executeRaw`alter table bridge_states rename to bridge_states_away`;
    try {
      expect(await pause.read()).toBe(false);
      await pause.settled();
      await expect(pause.read()).rejects.toThrow(/bridge_states/);
    } finally {
      await t.db.$executeRaw`alter table bridge_states_away rename to bridge_states`;
    }
    await pause.settled();
    await setBridgePaused(t.db, 'orders', true, 'local');
    pause.poke();
    expect(await pause.read()).toBe(true);
  });
});
