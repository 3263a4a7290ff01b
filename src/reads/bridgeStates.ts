// Which bridges an operator paused (bridge_states), for the `bridges` query.
import type { Db } from '../db/createDb.ts';
import { findPausedBridges } from '../db/models/bridgeStates.ts';

export interface BridgePause {
  pausedBy: string | null;
  pausedAt: Date | null;
}

/** The pauses of the named bridges that are paused, by name. */
export async function readBridgePauses(db: Db, names: string[]): Promise<Map<string, BridgePause>> {
  const rows = await findPausedBridges(db, names);
  return new Map(rows.map((r) => [r.name, { pausedBy: r.pausedBy, pausedAt: r.pausedAt }]));
}
