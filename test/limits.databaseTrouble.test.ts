// Database trouble outside a resolver (here the mutation rate limiter, which runs before
// execution) is reported like trouble inside one: a coded, retryable 503, not a masked 500.
// Found by the pool-starvation fault scenario (test/faults/poolStarvation.fault.test.ts).
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_PRINCIPAL } from '../src/api/auth/principal.ts';
import { createDb, type DbHandle } from '../src/db/createDb.ts';
import { createGraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute } from './helpers/graphql.ts';

const t = useTestDatabase();
let small: DbHandle;

beforeAll(() => {
  small = createDb(t.url, { poolMax: 1, acquireTimeoutMs: 200, statementTimeoutMs: 5_000, applicationName: 'lazarus-test-small' });
});
afterAll(() => small.close());

describe('database trouble in a plugin hook', () => {
  it('answers a rate-limited mutation with 503 SERVICE_UNAVAILABLE when no connection can be had', async () => {
    const server = createGraphQLServer({
      db: small.db, logger: pino({ level: 'silent' }), graphiql: false, authenticate: () => LOCAL_PRINCIPAL,
      isReady: async () => true, http: { mutationsPerMinute: 100 },
    });
    const only = await small.pool.connect();
    try {
      const result = await execute(server, 'mutation { addDeadLetterNote(input: { id: "1", note: "n" }) { __typename } }');
      expect(result.status).toBe(503);
      expect(result.body.errors?.map((e) => e.extensions?.code)).toEqual(['SERVICE_UNAVAILABLE']);
    } finally {
      only.release();
    }
    expect(await t.db.deadLetterAction.count()).toBe(0);
  });
});
