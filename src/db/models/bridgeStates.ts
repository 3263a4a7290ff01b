// Operator state of broker bridges (bridge_states): paused or not, by whom, since when.
import type { Db } from '../createDb.ts';

/** The paused bridges among `names`. */
export function findPausedBridges(db: Db, names: string[]) {
  return db.bridgeState.findMany({ where: { name: { in: names }, paused: true } });
}

/** Pauses or resumes a bridge; pausing again keeps the first pause's actor and time. */
export async function setBridgePaused(db: Db, name: string, paused: boolean, actor: string) {
  const now = new Date();
  if (!paused) {
    return db.bridgeState.upsert({
      where: { name },
      create: { name, paused: false },
      update: { paused: false, pausedBy: null, pausedAt: null, updatedAt: now },
    });
  }
  const current = await db.bridgeState.findUnique({ where: { name } });
  if (current?.paused) return current;
  return db.bridgeState.upsert({
    where: { name },
    create: { name, paused: true, pausedBy: actor, pausedAt: now },
    update: { paused: true, pausedBy: actor, pausedAt: now, updatedAt: now },
  });
}
