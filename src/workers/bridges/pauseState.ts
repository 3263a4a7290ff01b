// Whether a bridge is paused, as its runner knows it: bridge_states, re-read at least every
// `refreshMs`, so a pause through any instance holds on every one and across restarts.
// - a starting runner, a poked one (a pause or resume through this process) and a paused one wait
//   for the answer before their pass takes anything;
// - a running one re-reads beside its batches (the read's latency is not a batch's), and a read
//   that fails is thrown by the next `read()`, failing that pass as a failed read always did.
// Answers apply in the order the reads were sent: a late answer never overwrites a newer one.
import type { Db } from '../../db/createDb.ts';
import { findPausedBridges } from '../../db/models/bridgeStates.ts';

export interface PauseState {
  /** Paused or not, reading bridge_states first when the rules above say so. */
  read(): Promise<boolean>;
  /** A pause or resume through this process: the next read waits for a fresh answer. */
  poke(): void;
  /** Resolves once no read is in flight (before the database handle closes). */
  settled(): Promise<void>;
}

export function createPauseState(db: Db, name: string, refreshMs: number): PauseState {
  let paused = false;
  let readAt = -Infinity;
  let sent = 0;
  let answered = 0;
  let inBackground: Promise<void> | null = null;
  let failed: { error: unknown } | null = null;

  const fetch = async () => {
    const n = ++sent;
    readAt = Date.now();
    const found = await findPausedBridges(db, [name]);
    if (n > answered) {
      answered = n;
      paused = found.length > 0;
    }
  };

  return {
    async read() {
      if (failed) {
        const { error } = failed;
        failed = null;
        throw error;
      }
      const isDue = Date.now() - readAt >= refreshMs;
      if (isDue && (readAt === -Infinity || paused)) {
        await fetch();
      } else if (isDue && !inBackground) {
        inBackground = fetch().catch((error: unknown) => {
          failed = { error };
        }).finally(() => {
          inBackground = null;
        });
      }
      return paused;
    },
    poke() {
      readAt = -Infinity;
    },
    settled: async () => {
      await inBackground;
    },
  };
}
