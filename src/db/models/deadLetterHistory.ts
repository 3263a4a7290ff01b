// The history and delivery attempts of many dead letters at once (one statement per kind).
import type { Db } from '../createDb.ts';
import type { DeadLetterAction, DeliveryAttempt } from '../../generated/prisma/client.ts';

/** Oldest first per dead letter (by id). */
export function findDeadLetterActions(db: Db, deadLetterIds: bigint[]): Promise<DeadLetterAction[]> {
  return db.deadLetterAction.findMany({ where: { deadLetterId: { in: deadLetterIds } }, orderBy: { id: 'asc' } });
}

/** By dead letter, then attempt number. */
export function findDeliveryAttempts(db: Db, deadLetterIds: bigint[]): Promise<DeliveryAttempt[]> {
  return db.deliveryAttempt.findMany({ where: { deadLetterId: { in: deadLetterIds } }, orderBy: [{ deadLetterId: 'asc' }, { attemptNumber: 'asc' }] });
}
