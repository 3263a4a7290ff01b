import { createHash } from 'node:crypto';
import { get as httpGet } from 'node:http';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { authStartupProblem, createApiKeyAuthenticator, isLoopbackHost } from '../src/api/auth/apiKeys.ts';
import { LOCAL_PRINCIPAL } from '../src/api/auth/principal.ts';
import { ConfigError, loadConfig, parseApiKeys } from '../src/config.ts';
import { startService, StartupError } from '../src/service.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
const VIEWER_TOKEN = 'viewer-token-0123456789';
const OPERATOR_TOKEN = 'operator-token-0123456789';
const ADMIN_TOKEN = 'admin-token-0123456789abc';
const keys = parseApiKeys(
  `dash:viewer:${VIEWER_TOKEN}, sre-bob:operator:${OPERATOR_TOKEN},root:admin:sha256=${createHash('sha256').update(ADMIN_TOKEN).digest('hex')}`,
);

describe('LAZARUS_API_KEYS', () => {
  it('keeps only SHA-256 hashes of the tokens', () => {
    const config = loadConfig({ LAZARUS_API_KEYS: `dash:viewer:${VIEWER_TOKEN}` });
    expect(config.apiKeys).toEqual([{ name: 'dash', role: 'viewer', tokenSha256: createHash('sha256').update(VIEWER_TOKEN).digest() }]);
    expect(JSON.stringify(config)).not.toContain(VIEWER_TOKEN);
  });

  it.each([
    ['a bad role', 'x:superuser:0123456789abcdefgh', /role must be viewer, operator or admin/],
    ['a short token', 'x:viewer:short', /at least 16 characters/],
    ['a bad hash', 'x:viewer:sha256=abc', /64 hex digits/],
    ['a duplicate name', 'x:viewer:0123456789abcdefgh,x:admin:0123456789abcdefgh', /duplicate name x/],
  ])('refuses %s without echoing the token', (_name, value, message) => {
    expect(() => parseApiKeys(value)).toThrow(ConfigError);
    expect(() => parseApiKeys(value)).toThrow(message);
    try {
      parseApiKeys(value);
    } catch (error) {
      expect((error as Error).message).not.toContain('0123456789abcdefgh');
    }
  });
});

describe('bearer authentication', () => {
  const authenticate = createApiKeyAuthenticator(keys);
  const request = (authorization?: string) => new Request('http://x/graphql', { headers: authorization ? { authorization } : {} });

  it('maps each token to its principal and anything else to nobody', () => {
    expect(authenticate(request(`Bearer ${VIEWER_TOKEN}`))).toEqual({ name: 'dash', role: 'viewer' });
    expect(authenticate(request(`bearer ${OPERATOR_TOKEN}`))).toEqual({ name: 'sre-bob', role: 'operator' });
    expect(authenticate(request(`Bearer ${ADMIN_TOKEN}`))).toEqual({ name: 'root', role: 'admin' });
    expect(authenticate(request(`Bearer ${ADMIN_TOKEN}x`))).toBeNull();
    expect(authenticate(request(ADMIN_TOKEN))).toBeNull();
    expect(authenticate(request())).toBeNull();
  });

  it('lets requests to a loopback host in as the local admin when no keys are configured, and no others', () => {
    const keyless = createApiKeyAuthenticator([]);
    const to = (url: string) => keyless(new Request(url));
    expect(['http://localhost:4000/graphql', 'http://127.0.0.1/graphql', 'http://[::1]:4000/graphql', 'http://0x7f.1/graphql'].map(to)).toEqual(Array(4).fill(LOCAL_PRINCIPAL));
    expect(['http://evil.example:4000/graphql', 'http://localhost.evil.example/graphql', 'http://0.0.0.0:4000/graphql', 'http://10.0.0.5/graphql'].map(to)).toEqual(Array(4).fill(null));
    expect(keyless.refusal).toEqual({ status: 403, message: expect.stringMatching(/LAZARUS_API_KEYS/) });
    expect(createApiKeyAuthenticator([], { allowInsecure: true })(new Request('http://evil.example/graphql'))).toBe(LOCAL_PRINCIPAL);
  });
});

describe('roles through GraphQL', () => {
  const server = () => testServer(t.db, { authenticate: createApiKeyAuthenticator(keys) });
  const QUERY = '{ deadLetters { totalCount } }';
  const REQUEUE = `mutation ($ids: [ID!]) { requeueDeadLetters(input: { ids: $ids, dryRun: true }) { __typename } }`;
  const DELETE = `mutation ($ids: [ID!]) { deleteDeadLetters(input: { ids: $ids, dryRun: true }) { __typename } }`;
  const as = (token: string | null): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});

  it.each([
    ['no key', null, ['UNAUTHENTICATED', 'UNAUTHENTICATED', 'UNAUTHENTICATED']],
    ['a wrong key', 'not-a-real-token-at-all', ['UNAUTHENTICATED', 'UNAUTHENTICATED', 'UNAUTHENTICATED']],
    ['a viewer', VIEWER_TOKEN, ['ok', 'FORBIDDEN', 'FORBIDDEN']],
    ['an operator', OPERATOR_TOKEN, ['ok', 'ok', 'FORBIDDEN']],
    ['an admin', ADMIN_TOKEN, ['ok', 'ok', 'ok']],
  ] as const)('%s gets query / requeue / delete: %j', async (_who, token, expected) => {
    const row = await insertDeadLetter(t.db, { status: 'EXHAUSTED' });
    const s = server();
    const outcomes = [];
    for (const query of [QUERY, REQUEUE, DELETE]) {
      const { body } = await execute(s, query, { ids: [row.id.toString()] }, as(token));
      outcomes.push(body.errors?.[0]?.extensions?.code ?? 'ok');
    }
    expect(outcomes).toEqual(expected);
  });

  it('answers HTTP 401 with a WWW-Authenticate header when the key is missing or wrong', async () => {
    for (const token of [null, 'not-a-real-token-at-all']) {
      const { status, body } = await execute(server(), QUERY, {}, as(token));
      expect(status).toBe(401);
      expect(body).toEqual({ data: null, errors: [{ message: 'missing or invalid API key', extensions: { code: 'UNAUTHENTICATED' } }] });
    }
    const health = await server().fetch('http://x/health');
    expect(health.status).toBe(200);
  });

  it('tells each caller its own name and role through viewer', async () => {
    const seen = [];
    for (const token of [VIEWER_TOKEN, OPERATOR_TOKEN, ADMIN_TOKEN]) {
      seen.push((await execute(server(), '{ viewer { name role } }', {}, as(token))).body.data?.viewer);
    }
    expect(seen).toEqual([{ name: 'dash', role: 'VIEWER' }, { name: 'sre-bob', role: 'OPERATOR' }, { name: 'root', role: 'ADMIN' }]);
    const local = await execute(testServer(t.db), '{ viewer { name role } }', {});
    expect(local.body.data?.viewer).toEqual({ name: 'local', role: 'ADMIN' });
    expect((await execute(server(), '{ viewer { name } }', {})).body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('records the key’s name as the actor', async () => {
    const row = await insertDeadLetter(t.db, { status: 'EXHAUSTED' });
    await execute(server(), `mutation ($id: ID!) { addDeadLetterNote(input: { id: $id, note: "hi" }) { __typename } }`, { id: row.id.toString() }, as(OPERATOR_TOKEN));
    expect((await t.db.deadLetterAction.findFirstOrThrow({ where: { action: 'NOTE_ADDED' } })).actor).toBe('sre-bob');
  });
});

describe('start-up without keys', () => {
  it.each(['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1'])('allows the loopback address %s', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
    expect(authStartupProblem({ keyCount: 0, host, allowInsecure: false })).toBeNull();
  });

  it.each(['0.0.0.0', '::', '10.0.0.5', '127.0.0.1.nip.io', 'localhost.evil.example'])('does not take %s for loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });

  it('refuses a non-loopback address unless keys or the insecure flag are set', () => {
    expect(authStartupProblem({ keyCount: 0, host: '0.0.0.0', allowInsecure: false })).toMatch(/LAZARUS_API_KEYS/);
    expect(authStartupProblem({ keyCount: 1, host: '0.0.0.0', allowInsecure: false })).toBeNull();
    expect(authStartupProblem({ keyCount: 0, host: '0.0.0.0', allowInsecure: true })).toBeNull();
  });

  it('makes startService fail with a StartupError before touching the database', async () => {
    const config = loadConfig({ HOST: '0.0.0.0', DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none' });
    await expect(startService(config, pino({ level: 'silent' }))).rejects.toThrow(StartupError);
  });
});

describe('/metrics', () => {
  it('asks for a key (any role) when keys are configured, and a loopback host when not', async () => {
    const logger = pino({ level: 'silent' });
    const keyed = await startService(loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, RETRY_ENABLED: 'false', LAZARUS_API_KEYS: `dash:viewer:${VIEWER_TOKEN}` }), logger);
    const keyless = await startService(loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, RETRY_ENABLED: 'false' }), logger);
    try {
      const scrape = (url: string, headers: Record<string, string> = {}) => fetch(`${url}/metrics`, { headers });
      const anonymous = await scrape(keyed.url);
      const wrong = await scrape(keyed.url, { authorization: 'Bearer not-a-real-token-at-all' });
      const viewer = await scrape(keyed.url, { authorization: `Bearer ${VIEWER_TOKEN}` });
      const local = await scrape(keyless.url);
      const rebound = await new Promise<number>((resolve, reject) => {
        httpGet(`${keyless.url}/metrics`, { headers: { host: 'evil.example' } }, (res) => resolve(res.resume().statusCode!)).on('error', reject);
      });

      expect([anonymous.status, anonymous.headers.get('www-authenticate'), (await anonymous.json()).errors[0].extensions.code]).toEqual([401, 'Bearer', 'UNAUTHENTICATED']);
      expect(wrong.status).toBe(401);
      expect([viewer.status, local.status, rebound]).toEqual([200, 200, 403]);
      expect(await viewer.text()).toContain('lazarus_dead_letters');
    } finally {
      await keyed.close();
      await keyless.close();
    }
  });
});
