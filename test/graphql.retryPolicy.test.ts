import { beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
let admin: GraphQLServer;
let operator: GraphQLServer;

beforeAll(() => {
  const make = (role: 'admin' | 'operator') => testServer(t.db, { authenticate: () => ({ name: `${role}-alice`, role }) });
  admin = make('admin');
  operator = make('operator');
});

const UPSERT = `mutation ($input: UpsertRetryPolicyInput!) {
  upsertRetryPolicy(input: $input) {
    eventType maxAttempts backoff baseDelayMs maxDelayMs timeoutMs paused ordered concurrency
    targetUrl allowPrivateTarget hasSigningSecret permanentStatusCodes updatedBy
  }
}`;
const snapshot = () => t.db.$queryRaw`select * from retry_policies order by event_type`;

describe('retry policies over GraphQL', () => {
  it('creates a type’s policy from the default, overlays the input and records the admin', async () => {
    const { body } = await execute(admin, UPSERT, {
      input: { eventType: 'order.placed', maxAttempts: 5, backoff: 'LINEAR', targetUrl: 'https://hooks.example.com/orders', signingSecret: 'a-very-long-secret-value', ordered: true },
    });

    expect(body).toEqual({
      data: {
        upsertRetryPolicy: {
          eventType: 'order.placed', maxAttempts: 5, backoff: 'LINEAR', baseDelayMs: 1000, maxDelayMs: 3600000, timeoutMs: 10000,
          paused: false, ordered: true, concurrency: null, targetUrl: 'https://hooks.example.com/orders', allowPrivateTarget: false,
          hasSigningSecret: true, permanentStatusCodes: [400, 401, 403, 404, 405, 410, 413, 415, 422], updatedBy: 'admin-alice',
        },
      },
    });
    const listed = await execute(admin, '{ retryPolicies { eventType } }');
    expect(listed.body).toEqual({ data: { retryPolicies: [{ eventType: '*' }, { eventType: 'order.placed' }] } });
  });

  it('pauses and resumes a type, creating its policy when it had none', async () => {
    const paused = await execute(admin, 'mutation { pauseEventType(eventType: "invoice.sent") { eventType paused } }');
    expect(paused.body).toEqual({ data: { pauseEventType: { eventType: 'invoice.sent', paused: true } } });
    const resumed = await execute(admin, 'mutation { resumeEventType(eventType: "invoice.sent") { paused } }');
    expect(resumed.body).toEqual({ data: { resumeEventType: { paused: false } } });
  });

  it.each([
    [{ eventType: 'x', maxAttempts: -1 }, 'maxAttempts', 'OUT_OF_RANGE'],
    [{ eventType: 'x', maxAttempts: 1_000_000 }, 'maxAttempts', 'OUT_OF_RANGE'],
    [{ eventType: 'x', baseDelayMs: 5000, maxDelayMs: 10 }, 'maxDelayMs', 'OUT_OF_RANGE'],
    [{ eventType: 'x', timeoutMs: 0 }, 'timeoutMs', 'OUT_OF_RANGE'],
    [{ eventType: 'x', concurrency: 0 }, 'concurrency', 'OUT_OF_RANGE'],
    [{ eventType: 'x', permanentStatusCodes: [200] }, 'permanentStatusCodes', 'OUT_OF_RANGE'],
    [{ eventType: 'x', targetUrl: 'ftp://example.com/x' }, 'targetUrl', 'INVALID_URL'],
    [{ eventType: 'x', targetUrl: 'not a url' }, 'targetUrl', 'INVALID_URL'],
    [{ eventType: 'x', targetUrl: 'http://127.0.0.1:8080/hook' }, 'targetUrl', 'PRIVATE_TARGET'],
    [{ eventType: 'x', targetUrl: 'http://169.254.169.254/latest/meta-data' }, 'targetUrl', 'PRIVATE_TARGET'],
    [{ eventType: 'x', targetUrl: 'http://[::1]/hook' }, 'targetUrl', 'PRIVATE_TARGET'],
    [{ eventType: 'x', targetUrl: 'http://localhost/hook' }, 'targetUrl', 'PRIVATE_TARGET'],
    [{ eventType: 'x', signingSecret: 'short' }, 'signingSecret', 'INVALID_SECRET'],
    [{ eventType: 'bad type!' }, 'eventType', 'INVALID_EVENT_TYPE'],
    [{ eventType: 'x', maxAttempts: null }, 'maxAttempts', 'NULL_NOT_ALLOWED'],
  ])('rejects %j with a coded error naming %s and writes nothing', async (input, field, reason) => {
    const before = await snapshot();

    const { body } = await execute(admin, UPSERT, { input });

    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field, reason });
    expect(await snapshot()).toEqual(before);
  });

  it('accepts a private target when the policy explicitly allows it', async () => {
    const { body } = await execute(admin, UPSERT, { input: { eventType: 'x', targetUrl: 'http://127.0.0.1:8080/hook', allowPrivateTarget: true } });
    expect(body.errors).toBeUndefined();
  });

  it('refuses operators: policies are for admins', async () => {
    const before = await snapshot();
    const { body } = await execute(operator, 'mutation { pauseEventType(eventType: "x") { paused } }');
    expect(body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(await snapshot()).toEqual(before);
  });
});
