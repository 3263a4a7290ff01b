// Retry policies: every one as plugin-prisma selects them, and the policy writes.
import type { Db } from '../createDb.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import type { Queryable } from '../sql/queryable.ts';
import type { PrismaFieldQuery } from './prismaQuery.ts';

/** By event type, so the default "*" comes first. */
export function findRetryPolicies(db: Db, query: PrismaFieldQuery<never, Prisma.RetryPolicySelect> = {}) {
  return db.retryPolicy.findMany({ ...query, orderBy: { eventType: 'asc' } });
}

/** The policies of these event types that exist, in no particular order. */
export function findRetryPoliciesOf(db: Queryable, eventTypes: string[]) {
  return db.retryPolicy.findMany({ where: { eventType: { in: eventTypes } } });
}

/** Creates or replaces the policy of `eventType` with these values. */
export function saveRetryPolicy(db: Queryable, eventType: string, values: Omit<Prisma.RetryPolicyCreateInput, 'eventType' | 'updatedBy'>, actor: string) {
  return db.retryPolicy.upsert({
    where: { eventType },
    create: { ...values, eventType, updatedBy: actor },
    update: { ...values, updatedBy: actor },
  });
}
