// Saving a retry policy that lets held events go (a target where there was none, a type resumed or
// no longer ordered) releases them in one of two ways, chosen by the caller or, by default, by
// their number against the redrive threshold:
//  * AT_ONCE: they are due now, delivered as fast as the retry loop and the type's concurrency allow;
//  * RAMPED: a redrive over them, at the ramp's rate. In the save's own transaction the redrive
//    fixes its items and parks them (parkRedriveItems.ts): never due until a batch requeues them.
// One transaction: the policy, the redrive and the parking commit together or not at all, so a
// crash leaves either the held events held or a running redrive over parked events, which a
// runner resumes from its last id. The claim leases what a batch makes due, so no event is
// delivered twice concurrently. Saves queue on an advisory lock, so two cannot release the same events.
import type { Db } from '../db/createDb.ts';
import { countHeldEvents, type HeldCount } from '../db/sql/heldEvents.ts';
import { lockPolicySaves } from '../db/sql/lockPolicySaves.ts';
import { parkRedriveItems, RELEASE_PARKED_AT } from '../db/sql/parkRedriveItems.ts';
import type { RetryPolicy } from '../generated/prisma/client.ts';
import type { RedriveLimitsChange } from './redriveLimits.ts';
import { startRedrive } from './redrives.ts';
import { upsertRetryPolicy, type RetryPolicyChanges } from './retryPolicies.ts';
import type { TargetKindSpecs } from './retryTarget.ts';
import type { WriteConfig } from './writeConfig.ts';

export type HeldReleaseMode = 'RAMPED' | 'AT_ONCE';

/** A ramped release starts at a tenth of the redrive rate and reaches it after this many seconds. */
export const RELEASE_RAMP_SECONDS = 60;
/** The release's interactive transaction may run this long (parking 100,000 events takes a few seconds). */
const RELEASE_TIMEOUT_MS = 120_000;

export interface HeldRelease {
  /** Held events this save let go. */
  count: number;
  mode: HeldReleaseMode;
  /** RAMPED: the redrive that releases them. */
  redriveId: bigint | null;
}

export interface PolicySave {
  policy: RetryPolicy;
  /** Null when the save let no held event go. */
  release: HeldRelease | null;
}

/** The ramp of a release: from a tenth of the configured redrive rate up to it over RELEASE_RAMP_SECONDS. */
export function releaseRamp(config: Pick<WriteConfig, 'redriveRatePerSecond'>): RedriveLimitsChange {
  const max = Math.max(1, config.redriveRatePerSecond);
  return { maxRatePerSecond: max, startRatePerSecond: Math.max(1, Math.floor(max / 10)), rampSeconds: RELEASE_RAMP_SECONDS };
}

/** The default: ramped above the redrive threshold, at once up to it. */
export function defaultReleaseMode(count: number, config: Pick<WriteConfig, 'redriveThreshold'>): HeldReleaseMode {
  return count > config.redriveThreshold ? 'RAMPED' : 'AT_ONCE';
}

/**
 * Per event type, how many fewer events are held after than before (parked ones aside: they are
 * already being released). Types whose count did not drop are left out.
 */
export function releasedByType(before: readonly HeldCount[], after: readonly HeldCount[]): Map<string, number> {
  const sum = (counts: readonly HeldCount[]) => {
    const byType = new Map<string, number>();
    for (const c of counts) if (c.reason !== 'RELEASING') byType.set(c.eventType, (byType.get(c.eventType) ?? 0) + c.count);
    return byType;
  };
  const was = sum(before);
  const is = sum(after);
  const released = new Map<string, number>();
  for (const [type, n] of was) if (n > (is.get(type) ?? 0)) released.set(type, n - (is.get(type) ?? 0));
  return released;
}

/**
 * Creates or changes a policy (upsertRetryPolicy) and releases the held events it lets go, as
 * `release` asks or, when null, by defaultReleaseMode. A ramped release covers every PENDING event
 * of the released types that is not parked already.
 */
export async function saveRetryPolicy(
  db: Db,
  p: {
    eventType: string; changes: RetryPolicyChanges; actor: string; kinds: TargetKindSpecs; config: WriteConfig;
    release: HeldReleaseMode | null; inProcessEventTypes: readonly string[];
  },
): Promise<PolicySave> {
  return db.$transaction(async (tx) => {
    await lockPolicySaves(tx);
    const before = await countHeldEvents(tx, p.inProcessEventTypes);
    const policy = await upsertRetryPolicy(tx, p.eventType, p.changes, p.actor, p.kinds);
    const released = releasedByType(before, await countHeldEvents(tx, p.inProcessEventTypes));
    const count = [...released.values()].reduce((a, b) => a + b, 0);
    if (count === 0) return { policy, release: null };
    const mode = p.release ?? defaultReleaseMode(count, p.config);
    if (mode === 'AT_ONCE') return { policy, release: { count, mode, redriveId: null } };
    const redrive = await startRedrive(tx, p.actor, {
      filter: { eventTypes: [...released.keys()].sort(), statuses: ['PENDING'], nextAttemptAt: { to: RELEASE_PARKED_AT } },
      ratePerSecond: null,
      limits: releaseRamp(p.config),
      defaultRatePerSecond: p.config.redriveRatePerSecond,
      resetAttempts: false,
      force: false,
      reason: `held events released by saving the ${p.eventType} policy`,
    });
    await parkRedriveItems(tx, redrive.id);
    return { policy, release: { count, mode, redriveId: redrive.id } };
  }, { timeout: RELEASE_TIMEOUT_MS, maxWait: RELEASE_TIMEOUT_MS });
}
