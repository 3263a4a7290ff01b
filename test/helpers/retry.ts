import { pino } from 'pino';
import type { Db } from '../../src/db/createDb.ts';
import type { Prisma } from '../../src/generated/prisma/client.ts';
import type { RetryPassDeps } from '../../src/workers/retry/runRetryPass.ts';
import { createWebhookDeliver } from '../../src/workers/targets/webhook.ts';

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

/** Writes a policy as given; `targetUrl` and `signingSecret` are short for a webhook target. */
export async function setPolicy(
  db: Db, eventType: string,
  { targetUrl, signingSecret, ...data }: Omit<Prisma.RetryPolicyCreateInput, 'eventType'> & { targetUrl?: string; signingSecret?: string },
) {
  const target = targetUrl === undefined ? {} : { targetKind: 'webhook', targetSettings: { url: targetUrl, ...(signingSecret && { secret: signingSecret }) } };
  await db.retryPolicy.upsert({ where: { eventType }, create: { eventType, ...data, ...target }, update: { ...data, ...target } });
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

/** What each attempt recorded of its request and response (domain/attemptDetails.ts). */
export async function attemptDetailsOf(db: Db, id: bigint) {
  return db.deliveryAttempt.findMany({
    where: { deadLetterId: id },
    orderBy: { id: 'asc' },
    select: { target: true, requestHeaders: true, requestBodyBytes: true, requestBodySha256: true, responseHeaders: true, responseBody: true },
  });
}
