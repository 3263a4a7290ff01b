import { pino } from 'pino';
import type { Db } from '../../src/db/createDb.ts';
import type { Prisma } from '../../src/generated/prisma/client.ts';
import type { RetryPassDeps } from '../../src/workers/retry/runRetryPass.ts';
import { createWebhookDeliver } from '../../src/workers/retry/webhook.ts';

export const silentLogger = pino({ level: 'silent' });

export function passDeps(db: Db, overrides: Partial<RetryPassDeps> = {}): RetryPassDeps {
  return {
    db,
    deliver: createWebhookDeliver(),
    config: { workerId: 'worker-a', batchSize: 10, concurrency: 4, leaseSeconds: 30 },
    logger: silentLogger,
    random: () => 0.5,
    ...overrides,
  };
}

export async function setPolicy(db: Db, eventType: string, data: Omit<Prisma.RetryPolicyCreateInput, 'eventType'>) {
  await db.retryPolicy.upsert({ where: { eventType }, create: { eventType, ...data }, update: data });
}

export async function statusOf(db: Db, id: bigint) {
  return db.deadLetter.findUniqueOrThrow({
    where: { id },
    select: { status: true, attempts: true, leaseToken: true, nextAttemptAt: true, updatedAt: true },
  });
}

export async function attemptsOf(db: Db, id: bigint) {
  return db.deliveryAttempt.findMany({
    where: { deadLetterId: id },
    orderBy: { id: 'asc' },
    select: { attemptNumber: true, outcome: true, statusCode: true, workerId: true, errorMessage: true },
  });
}
