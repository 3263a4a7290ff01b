// A small, fully known data set for the read-side tests: every filter field has rows that match
// and rows that do not, and every sort key has ties broken by id.
import type { Db } from '../../src/db/createDb.ts';
import type { Prisma } from '../../src/generated/prisma/client.ts';

export const T0 = new Date('2026-11-01T00:00:00.000Z');
export const hours = (h: number) => new Date(T0.getTime() + h * 3_600_000);

type Row = Partial<Prisma.DeadLetterUncheckedCreateInput> & { key: string };

export const SEED_ROWS: Row[] = [
  { key: 'a', eventType: 'order.placed', queue: 'orders', source: 'checkout', status: 'PENDING', errorKind: 'DOWNSTREAM_API',
    errorMessage: 'HTTP 503 from inventory-service (request 17)', payload: { orderId: 1, customer: { id: 'c-1', tier: 'gold' }, items: [1, 2] },
    createdAt: hours(0), updatedAt: hours(1), nextAttemptAt: hours(5), attempts: 1, orderingKey: 'cust-1', orderingSeq: 1n },
  { key: 'b', eventType: 'order.placed', queue: 'orders', source: 'checkout', status: 'EXHAUSTED', errorKind: 'DOWNSTREAM_API',
    errorMessage: 'HTTP 503 from inventory-service (request 912)', errorStack: 'Error: upstream\n    at fetchStock (stock.ts:10)',
    payload: { orderId: 2, customer: { id: 'c-2', tier: 'silver' } }, createdAt: hours(0), updatedAt: hours(2), nextAttemptAt: null, attempts: 10,
    orderingKey: 'cust-2', orderingSeq: 1n },
  { key: 'c', eventType: 'order.shipped', queue: 'shipping', source: 'warehouse', status: 'PENDING', errorKind: 'TIMEOUT',
    errorMessage: 'timeout after 30000 ms calling 3f2a9c1e-1b2c-4d5e-8f90-123456789abc', payload: { orderId: 3, customer: { id: 'c-1', tier: 'gold', vip: true } },
    createdAt: hours(3), updatedAt: hours(3), nextAttemptAt: hours(4), attempts: 3, orderingKey: 'cust-2', orderingSeq: 2n },
  { key: 'd', eventType: 'order.shipped', queue: 'shipping', source: 'warehouse', status: 'SUCCEEDED', errorKind: 'TIMEOUT',
    errorMessage: 'timeout after 15000 ms calling 0b8e1f77-aaaa-4bbb-8ccc-0123456789ab', payload: { orderId: 4, customer: { id: 'c-3' } },
    createdAt: hours(26), updatedAt: hours(27), nextAttemptAt: null, attempts: 2, resolvedAt: hours(27) },
  { key: 'e', eventType: 'user.signup', queue: 'default', source: 'web', status: 'RESOLVED', errorKind: 'VALIDATION',
    errorMessage: "field 'email' 100% invalid_value", errorStack: 'ValidationError at Inventory.check', payload: [1, 2, 3],
    createdAt: hours(30), updatedAt: hours(31), nextAttemptAt: null, attempts: 0, resolvedAt: hours(31) },
  { key: 'f', eventType: 'user.signup', queue: 'default', source: 'web', status: 'SUCCEEDED', errorKind: 'VALIDATION',
    errorMessage: "field 'name' too long at 2026-11-02T06:00:00Z", payload: { orderId: '1', customer: null },
    createdAt: hours(30), updatedAt: hours(32), nextAttemptAt: null, attempts: 4, resolvedAt: hours(32) },
  { key: 'g', eventType: 'order.placed', queue: 'orders', source: 'checkout', status: 'PENDING', errorKind: 'CRASH',
    errorMessage: "' OR 1=1 --", payload: { orderId: 7, customer: { id: 'c-1', tier: 'gold' } },
    createdAt: hours(50), updatedAt: hours(50), nextAttemptAt: hours(4), attempts: 3, orderingKey: 'cust-2', orderingSeq: 3n },
];

/** Inserts SEED_ROWS in order; returns the id of each row by its key. */
export async function seedReadRows(db: Db, rows: Row[] = SEED_ROWS): Promise<Record<string, bigint>> {
  const ids: Record<string, bigint> = {};
  for (const { key, ...data } of rows) {
    const created = await db.deadLetter.create({ data: { eventType: 'x', ...data } });
    ids[key] = created.id;
  }
  // The stamp trigger sets updated_at on UPDATE only, so inserted values stand as given.
  return ids;
}
