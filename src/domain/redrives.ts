// Throttled redrives: a large requeue by filter, done in batches at a rate limit by the runner
// (src/workers/redriveRunner.ts). States: RUNNING ⇄ PAUSED → CANCELLED; RUNNING → COMPLETED;
// RUNNING → FAILED (batches keep failing) → RUNNING or CANCELLED.
import type { Db } from '../db/createDb.ts';
import { countDeadLetterTargets } from '../db/sql/countDeadLetterTargets.ts';
import { insertRedrive } from '../db/sql/insertRedrive.ts';
import { requeueRedriveBatch, type RedriveBatchResult } from '../db/sql/requeueRedriveBatch.ts';
import { setRedriveStatus } from '../db/sql/setRedriveStatus.ts';
import type { RedriveStatus } from '../generated/prisma/enums.ts';
import { deadLetterWhereSql, type DeadLetterFilter } from '../db/sql/deadLetterWhere.ts';
import { DomainError, InvalidTransitionError, ValidationError } from './errors.ts';
import { optionalReason, requeue, type BulkResult, type RequeueOptions } from './operatorActions.ts';
import { allowedFromStatuses } from './transitions.ts';
import type { WriteConfig } from './writeConfig.ts';

// One redrive batch is one statement: 100 rows keep it to a few milliseconds, so it never holds the
// live feed's horizon (a faster redrive runs more batches a second).
export const MAX_REDRIVE_BATCH = 100;

/** No redrive with this id. */
export class RedriveNotFoundError extends DomainError {
  override name = 'RedriveNotFoundError';
  readonly id: bigint;
  constructor(id: bigint) {
    super('NOT_FOUND', `no redrive with id ${id}`);
    this.id = id;
  }
}

export interface StartRedriveOptions {
  filter: DeadLetterFilter;
  ratePerSecond: number;
  resetAttempts: boolean;
  force: boolean;
  reason: string | null;
}

/** Starts a redrive over what the filter selects now; the runner picks it up. */
export async function startRedrive(db: Db, actor: string, o: StartRedriveOptions): Promise<{ id: bigint; total: number }> {
  if (!Number.isInteger(o.ratePerSecond) || o.ratePerSecond < 1 || o.ratePerSecond > 100_000) {
    throw new ValidationError('ratePerSecond', 'must be an integer from 1 to 100000');
  }
  return insertRedrive(db, {
    where: deadLetterWhereSql(o.filter),
    allowed: allowedFromStatuses('REQUEUE', o.force),
    filterJson: JSON.stringify(o.filter, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)),
    ratePerSecond: o.ratePerSecond,
    // A batch is at most one second of work, so the rate limit stays smooth.
    batchSize: Math.min(MAX_REDRIVE_BATCH, o.ratePerSecond),
    resetAttempts: o.resetAttempts,
    force: o.force,
    reason: o.reason,
    actor,
  });
}

const MOVES: Record<'pause' | 'resume' | 'cancel', { from: RedriveStatus[]; to: RedriveStatus }> = {
  pause: { from: ['RUNNING'], to: 'PAUSED' },
  resume: { from: ['PAUSED', 'FAILED'], to: 'RUNNING' },
  cancel: { from: ['RUNNING', 'PAUSED', 'FAILED'], to: 'CANCELLED' },
};

export type RequeueOutcome = BulkResult & { redriveId: bigint | null };

/**
 * A requeue as operators ask for it: by filter above `config.redriveThreshold` events (or with an
 * explicit rate) it starts a throttled redrive; otherwise it requeues at once.
 */
export async function requeueOrStartRedrive(
  db: Db,
  actor: string,
  config: WriteConfig,
  o: RequeueOptions & { ratePerSecond: number | null },
): Promise<RequeueOutcome> {
  if ('ids' in o.selection && o.ratePerSecond) throw new ValidationError('ratePerSecond', 'only applies to a requeue by filter');
  if ('filter' in o.selection && !o.dryRun && Object.keys(o.selection.filter).length > 0) {
    const reason = optionalReason(o.reason);
    const where = deadLetterWhereSql(o.selection.filter);
    const { count } = await countDeadLetterTargets(db, { where, allowed: allowedFromStatuses('REQUEUE', o.force), sample: 0 });
    if (count > config.redriveThreshold || o.ratePerSecond) {
      if (o.at) throw new ValidationError('at', 'a throttled redrive requeues for now; leave at empty or use a smaller selection');
      const redrive = await startRedrive(db, actor, {
        filter: o.selection.filter,
        ratePerSecond: o.ratePerSecond ?? config.redriveRatePerSecond,
        resetAttempts: o.resetAttempts,
        force: o.force,
        reason,
      });
      return { count: redrive.total, ids: [], dryRun: false, redriveId: redrive.id };
    }
  }
  return { ...(await requeue(db, actor, o)), redriveId: null };
}

/** Pauses, resumes or cancels a redrive. A batch in flight finishes; the next one sees the status. */
export async function moveRedrive(db: Db, id: bigint, move: keyof typeof MOVES): Promise<void> {
  const { from, to } = MOVES[move];
  const result = await setRedriveStatus(db, { id, from, to });
  if (result.status === null) throw new RedriveNotFoundError(id);
  if (!result.changed) throw new InvalidTransitionError([id], result.status as never, move.toUpperCase());
}

/** Marks a RUNNING redrive FAILED with the error that kept its batches from committing. */
export async function failRedrive(db: Db, id: bigint, error: string): Promise<void> {
  await setRedriveStatus(db, { id, from: ['RUNNING'], to: 'FAILED', error: error.slice(0, 2_000) });
}

/** Runs the next batch of a redrive this owner holds the lease on. */
export function runRedriveBatch(db: Db, p: { redriveId: bigint; owner: string; leaseSeconds: number }): Promise<RedriveBatchResult> {
  return requeueRedriveBatch(db, { ...p, allowed: (force) => allowedFromStatuses('REQUEUE', force) });
}
