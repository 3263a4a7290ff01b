// Pausing and resuming a broker bridge: a row in bridge_states, read by every instance's runner.
import type { Db } from '../db/createDb.ts';
import { setBridgePaused } from '../db/models/bridgeStates.ts';

/** Pauses (true) or resumes (false) the bridge; pausing a paused bridge keeps who paused it and when. */
export async function setBridgePause(db: Db, name: string, paused: boolean, actor: string): Promise<void> {
  await setBridgePaused(db, name, paused, actor);
}
