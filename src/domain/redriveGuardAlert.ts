// The one place a redrive paused by its guard is announced beyond the redrive itself.
//
// Today it does nothing: the pause is already recorded (redrives.paused_by = 'GUARD', paused_reason,
// and a PAUSED row in redrive_actions with the guard's window), and the runner logs it. The alerts
// work (issue 19 item 5, trigger "a redrive paused by its guard") raises its outbound alert here;
// it is called once, from pauseRedriveByGuard, after the pause committed. A process killed between
// that commit and this call skips the alert, so an alerts worker that must never miss one should
// also read PAUSED rows of redrive_actions with actor GUARD_ACTOR.
import type { Db } from '../db/createDb.ts';
import type { GuardWindow } from './redriveLimits.ts';

export interface GuardPause {
  redriveId: bigint;
  reason: string;
  threshold: number;
  window: GuardWindow;
}

export async function raiseRedriveGuardAlert(_db: Db, _pause: GuardPause): Promise<void> {
  // Intentionally empty until outbound alerts exist.
}
