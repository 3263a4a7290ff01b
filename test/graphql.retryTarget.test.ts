// The retry policy's target over GraphQL: a kind plus settings, checked by the kind's own parser,
// described without secrets; the deprecated webhook fields keep working.
import { beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
let admin: GraphQLServer;

beforeAll(() => {
  admin = testServer(t.db, { authenticate: () => ({ name: 'admin-alice', role: 'admin' }) });
});

const UPSERT = `mutation ($input: UpsertRetryPolicyInput!) {
  upsertRetryPolicy(input: $input) { eventType target { kind description settings secretsSet } targetUrl hasSigningSecret }
}`;
const SECRET = 'whsec_dGhpcy1pcy1hLXZlcnktc2VjcmV0LWtleQ==';
const URL_WITH_TOKEN = 'https://hooks.example.com/services/T0/B0/path-token';
const stored = async (eventType: string) =>
  t.db.retryPolicy.findUnique({ where: { eventType }, select: { targetKind: true, targetSettings: true } });
const snapshot = () => t.db.$queryRaw`select * from retry_policies order by event_type`;

describe('a retry policy’s target over GraphQL', () => {
  it('sets a webhook target by kind and settings, and answers with the host only and no secret', async () => {
    const { body } = await execute(admin, UPSERT, {
      input: { eventType: 'order.placed', target: { kind: 'webhook', settings: { url: URL_WITH_TOKEN, secret: SECRET } } },
    });

    expect(body).toEqual({
      data: {
        upsertRetryPolicy: {
          eventType: 'order.placed',
          target: { kind: 'webhook', description: 'webhook to hooks.example.com, signed', settings: { url: URL_WITH_TOKEN }, secretsSet: ['secret'] },
          targetUrl: URL_WITH_TOKEN,
          hasSigningSecret: true,
        },
      },
    });
    expect(JSON.stringify(body)).not.toContain(SECRET);
    expect(await stored('order.placed')).toEqual({ targetKind: 'webhook', targetSettings: { url: URL_WITH_TOKEN, secret: SECRET } });
  });

  it('keeps the stored secret when a change of the same kind omits it, and removes it when given null', async () => {
    await execute(admin, UPSERT, { input: { eventType: 'x', target: { kind: 'webhook', settings: { url: 'https://a.example.com/h', secret: SECRET } } } });

    await execute(admin, UPSERT, { input: { eventType: 'x', target: { kind: 'webhook', settings: { url: 'https://b.example.com/h' } } } });
    expect(await stored('x')).toEqual({ targetKind: 'webhook', targetSettings: { url: 'https://b.example.com/h', secret: SECRET } });

    await execute(admin, UPSERT, { input: { eventType: 'x', target: { kind: 'webhook', settings: { secret: null } } } });
    expect(await stored('x')).toEqual({ targetKind: 'webhook', targetSettings: { url: 'https://b.example.com/h' } });
  });

  it('removes the target with target: null, and with the deprecated targetUrl: null', async () => {
    for (const input of [{ target: null }, { targetUrl: null }]) {
      await execute(admin, UPSERT, { input: { eventType: 'x', target: { kind: 'webhook', settings: { url: 'https://a.example.com/h' } } } });

      const { body } = await execute(admin, UPSERT, { input: { eventType: 'x', ...input } });

      expect(body.data?.upsertRetryPolicy).toMatchObject({ target: null, targetUrl: null, hasSigningSecret: false });
      expect(await stored('x')).toEqual({ targetKind: null, targetSettings: null });
    }
  });

  it('sets a webhook through the deprecated targetUrl and signingSecret fields', async () => {
    const { body } = await execute(admin, UPSERT, { input: { eventType: 'x', targetUrl: 'https://a.example.com/h', signingSecret: SECRET } });

    expect((body.data?.upsertRetryPolicy as { target: unknown }).target).toEqual({ kind: 'webhook', description: 'webhook to a.example.com, signed', settings: { url: 'https://a.example.com/h' }, secretsSet: ['secret'] });
  });

  it.each([
    [{ kind: 'webhook', settings: { url: 'ftp://example.com/x' } }, 'target.settings.url', 'INVALID_URL'],
    [{ kind: 'webhook', settings: { url: 'http://10.0.0.8/hook' } }, 'target.settings.url', 'PRIVATE_TARGET'],
    [{ kind: 'webhook', settings: { secret: SECRET } }, 'target.settings.url', 'INVALID_URL'],
    [{ kind: 'webhook', settings: { url: 'https://a.example.com/h', secret: 'short' } }, 'target.settings.secret', 'INVALID_SECRET'],
    [{ kind: 'webhook', settings: { url: 'https://a.example.com/h', method: 'PUT' } }, 'target.settings.method', 'INVALID_SETTING'],
    [{ kind: 'webhook', settings: 'https://a.example.com/h' }, 'target.settings', 'INVALID_SETTING'],
    [{ kind: 'carrier-pigeon', settings: {} }, 'target.kind', 'UNKNOWN_TARGET_KIND'],
  ])('refuses the target %j with a coded error naming %s, and writes nothing', async (target, field, reason) => {
    const before = await snapshot();

    const { body } = await execute(admin, UPSERT, { input: { eventType: 'x', target } });

    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field, reason });
    expect(await snapshot()).toEqual(before);
  });

  it('refuses a target and the deprecated webhook fields together', async () => {
    const { body } = await execute(admin, UPSERT, {
      input: { eventType: 'x', target: { kind: 'webhook', settings: { url: 'https://a.example.com/h' } }, targetUrl: 'https://b.example.com/h' },
    });

    expect(body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'target', reason: 'CONFLICTING_FIELDS' });
    expect(await stored('x')).toBeNull();
  });

  it('lists the kinds it delivers to, with the settings each takes', async () => {
    const { body } = await execute(admin, '{ retryTargetKinds { kind label fields { name label isSecret isRequired } } }');

    // Each kind's own test file checks its entry (the broker kinds: retry.<kind>Target.test.ts).
    expect((body.data as { retryTargetKinds: unknown[] }).retryTargetKinds).toContainEqual({
      kind: 'webhook', label: 'Webhook (HTTP POST)',
      fields: [
        { name: 'url', label: 'Webhook URL', isSecret: false, isRequired: true },
        { name: 'secret', label: 'Signing secret', isSecret: true, isRequired: false },
      ],
    });
  });
});
