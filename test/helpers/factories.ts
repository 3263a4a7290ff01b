import type { Db } from '../../src/db/createDb.ts';
import type { Prisma } from '../../src/generated/prisma/client.ts';

let sequence = 0;

export async function insertDeadLetter(db: Db, overrides: Partial<Prisma.DeadLetterUncheckedCreateInput> = {}) {
  sequence += 1;
  return db.deadLetter.create({
    data: {
      eventType: 'order.placed',
      payload: { orderId: sequence },
      errorKind: 'DOWNSTREAM_API',
      errorMessage: `HTTP 503 from inventory-service (request ${sequence})`,
      ...overrides,
    },
  });
}
