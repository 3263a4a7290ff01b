import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

describe('loadConfig', () => {
  it('has working defaults for an empty environment', () => {
    expect(loadConfig({})).toMatchObject({
      env: 'development',
      port: 4000,
      host: '127.0.0.1',
      databaseUrl: undefined,
      dataDir: '.lazarus/pgdata',
      logFormat: 'pretty',
      graphiqlEnabled: true,
    });
  });

  it('logs JSON and hides GraphiQL in production unless asked', () => {
    expect(loadConfig({ NODE_ENV: 'production' })).toMatchObject({ logFormat: 'json', graphiqlEnabled: false });
    expect(loadConfig({ NODE_ENV: 'production', GRAPHIQL_ENABLED: 'true' }).graphiqlEnabled).toBe(true);
  });

  it('reads the CORS allow-list and keeps introspection off in production', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example, http://localhost:3000' }).http.corsOrigins).toEqual([
      'https://a.example',
      'http://localhost:3000',
    ]);
    expect(loadConfig({}).http).toMatchObject({ corsOrigins: [], introspection: true, maxBodyBytes: 524288 });
    expect(loadConfig({ NODE_ENV: 'production' }).http.introspection).toBe(false);
  });

  it('prepares fixed-text statements unless DATABASE_PREPARED_STATEMENTS turns them off', () => {
    expect(loadConfig({}).db.preparedStatements).toBe(true);
    expect(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'false' }).db.preparedStatements).toBe(false);
  });

  it('reads how often the change feed polls, 1 s by default', () => {
    expect(loadConfig({}).live.pollMs).toBe(1000);
    expect(loadConfig({ LIVE_POLL_MS: '100' }).live.pollMs).toBe(100);
  });

  it('reads the migrations\' lock_timeout and how long they retry, 1 s and 5 minutes by default', () => {
    expect(loadConfig({}).migrations).toEqual({ lockTimeoutMs: 500, retryForMs: 300_000 });
    expect(loadConfig({ MIGRATION_LOCK_TIMEOUT_MS: '250', MIGRATION_RETRY_FOR_MS: '0' }).migrations).toEqual({ lockTimeoutMs: 250, retryForMs: 0 });
    expect(() => loadConfig({ MIGRATION_LOCK_TIMEOUT_MS: '0' })).toThrow(/MIGRATION_LOCK_TIMEOUT_MS/);
  });

  it('returns a frozen object', () => {
    expect(Object.isFrozen(loadConfig({}))).toBe(true);
  });

  it.each([
    [{ DATABASE_URL: 'not a url' }, /DATABASE_URL: must be a postgres/],
    [{ DATABASE_URL: 'mysql://localhost/db' }, /DATABASE_URL: must be a postgres/],
    [{ PORT: 'eighty' }, /PORT:/],
    [{ PORT: '70000' }, /PORT:/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL:/],
    [{ GRAPHIQL_ENABLED: 'yes' }, /GRAPHIQL_ENABLED:/],
    [{ CORS_ORIGINS: 'https://ok.example, *' }, /CORS_ORIGINS: must be a comma-separated list of origins/],
    [{ CORS_ORIGINS: 'https://ok.example/path' }, /CORS_ORIGINS:/],
    [{ MAX_BODY_BYTES: '10' }, /MAX_BODY_BYTES:/],
    [{ LIVE_POLL_MS: '5' }, /LIVE_POLL_MS:/],
  ])('rejects %j with a message naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('names every bad variable at once', () => {
    expect(() => loadConfig({ PORT: 'x', LOG_LEVEL: 'y' })).toThrow(/PORT:.*LOG_LEVEL:/);
  });
});
