// Environment → a typed, frozen Config, validated once at boot. Imports nothing from src/.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

export const DEFAULT_PORT = 4000;
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_DATA_DIR = '.lazarus/pgdata';
export const DEFAULT_EMBEDDED_PG_PORT = 54329;
export const DEFAULT_DB_POOL_MAX = 10;
export const DEFAULT_DB_POOL_ACQUIRE_TIMEOUT_MS = 5_000;
export const DEFAULT_DB_STATEMENT_TIMEOUT_MS = 15_000;
// Producers' INSERTs queue behind a migration's waiting ACCESS EXCLUSIVE request, so this is the
// longest a migration can stop them per attempt (docs/migrations.md).
export const DEFAULT_MIGRATION_LOCK_TIMEOUT_MS = 500;
export const DEFAULT_MIGRATION_RETRY_FOR_MS = 300_000;
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;
// Above the 256 KiB payload cap, so a maximal payload (plus its envelope) reaches validation.
export const DEFAULT_MAX_BODY_BYTES = 512 * 1024;
export const DEFAULT_MAX_BATCH_BODY_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MUTATIONS_PER_MINUTE = 600;
export const DEFAULT_REDRIVE_THRESHOLD = 1_000;
export const DEFAULT_REDRIVE_RATE_PER_SECOND = 100;
const MIN_API_TOKEN_LENGTH = 16;
export const DEFAULT_RETRY_POLL_INTERVAL_MS = 1_000;
export const DEFAULT_RETRY_BATCH_SIZE = 100;
export const DEFAULT_RETRY_CONCURRENCY = 10;
export const DEFAULT_RETRY_LEASE_SECONDS = 30;
export const DEFAULT_RETRY_POOL_MAX = 4;
export const DEFAULT_RETENTION_DAYS = 30;
export const DEFAULT_LIVE_POLL_MS = 1_000;
export const DEFAULT_METRICS_MAX_EVENT_TYPES = 50;
export const DEFAULT_ALERT_EVALUATE_INTERVAL_MS = 15_000;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const postgresUrl = z.string().refine(isPostgresUrl, {
  message: 'must be a postgres:// or postgresql:// URL, e.g. postgresql://user:pass@host:5432/db',
});

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(DEFAULT_PORT),
  HOST: z.string().min(1).default(DEFAULT_HOST),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  DATABASE_URL: postgresUrl.optional(),
  LAZARUS_DATA_DIR: z.string().min(1).default(DEFAULT_DATA_DIR),
  LAZARUS_EMBEDDED_PG_PORT: z.coerce.number().int().min(1).max(65535).default(DEFAULT_EMBEDDED_PG_PORT),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(DEFAULT_DB_POOL_MAX),
  DATABASE_POOL_ACQUIRE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(DEFAULT_DB_POOL_ACQUIRE_TIMEOUT_MS),
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(DEFAULT_DB_STATEMENT_TIMEOUT_MS),
  DATABASE_PREPARED_STATEMENTS: booleanFlag.default(true),
  MIGRATION_LOCK_TIMEOUT_MS: z.coerce.number().int().min(10).max(600_000).default(DEFAULT_MIGRATION_LOCK_TIMEOUT_MS),
  MIGRATION_RETRY_FOR_MS: z.coerce.number().int().min(0).max(86_400_000).default(DEFAULT_MIGRATION_RETRY_FOR_MS),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(DEFAULT_SHUTDOWN_TIMEOUT_MS),
  GRAPHIQL_ENABLED: booleanFlag.optional(),
  GRAPHQL_INTROSPECTION: booleanFlag.optional(),
  CORS_ORIGINS: z
    .string()
    .default('')
    .transform((v) => v.split(',').map((o) => o.trim()).filter(Boolean))
    .refine((origins) => origins.every(isOrigin), { message: 'must be a comma-separated list of origins like https://ops.example.com' }),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(DEFAULT_MAX_BODY_BYTES),
  MAX_BATCH_BODY_BYTES: z.coerce.number().int().min(1024).max(256 * 1024 * 1024).default(DEFAULT_MAX_BATCH_BODY_BYTES),
  RATE_LIMIT_MUTATIONS_PER_MINUTE: z.coerce.number().int().min(0).max(1_000_000).default(DEFAULT_MUTATIONS_PER_MINUTE),
  LAZARUS_API_KEYS: z.string().optional(),
  LAZARUS_ALLOW_INSECURE: booleanFlag.default(false),
  LAZARUS_CONSOLE_DIR: z.string().min(1).optional(),
  LAZARUS_EVENT_TYPES: z.string().optional(),
  LAZARUS_REDRIVE_THRESHOLD: z.coerce.number().int().min(1).max(10_000_000).default(DEFAULT_REDRIVE_THRESHOLD),
  LAZARUS_REDRIVE_RATE_PER_SECOND: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_REDRIVE_RATE_PER_SECOND),
  RETRY_ENABLED: booleanFlag.default(true),
  RETRY_POLL_INTERVAL_MS: z.coerce.number().int().min(10).max(3_600_000).default(DEFAULT_RETRY_POLL_INTERVAL_MS),
  RETRY_BATCH_SIZE: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_RETRY_BATCH_SIZE),
  RETRY_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_RETRY_CONCURRENCY),
  RETRY_LEASE_SECONDS: z.coerce.number().int().min(2).max(3_600).default(DEFAULT_RETRY_LEASE_SECONDS),
  RETRY_POOL_MAX: z.coerce.number().int().min(2).max(100).default(DEFAULT_RETRY_POOL_MAX),
  RETRY_CLAIM_AHEAD: booleanFlag.default(true),
  RETENTION_DAYS: z.coerce.number().min(0).max(36_500).default(DEFAULT_RETENTION_DAYS),
  LIVE_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(DEFAULT_LIVE_POLL_MS),
  LAZARUS_METRICS_MAX_EVENT_TYPES: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_METRICS_MAX_EVENT_TYPES),
  LAZARUS_BRIDGES: z.string().optional(),
  LAZARUS_BRIDGES_FILE: z.string().min(1).optional(),
  LAZARUS_ALERT_EVALUATE_INTERVAL_MS: z.coerce.number().int().max(3_600_000)
    .refine((ms) => ms === 0 || ms >= 1_000, { message: 'must be 0 (off) or at least 1000' })
    .default(DEFAULT_ALERT_EVALUATE_INTERVAL_MS),
});

export interface Config {
  /** `production` turns JSON logs on and GraphiQL off by default. */
  readonly env: 'development' | 'production' | 'test';
  /** HTTP listen port; 0 picks a free one. Default 4000. */
  readonly port: number;
  /** HTTP listen address. Default 127.0.0.1. */
  readonly host: string;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `pretty` for humans (default outside production), `json` for log shippers. */
  readonly logFormat: 'json' | 'pretty';
  /** External PostgreSQL; when absent an embedded PostgreSQL is started in `dataDir`. */
  readonly databaseUrl: string | undefined;
  /** Embedded PostgreSQL data folder, kept across restarts. Default `.lazarus/pgdata`. */
  readonly dataDir: string;
  /** Embedded PostgreSQL port. Default 54329. */
  readonly embeddedPgPort: number;
  readonly db: {
    /** Connections in the API pool. Default 10. */
    readonly poolMax: number;
    /** How long a query waits for a pooled connection before failing. Default 5000 ms. */
    readonly acquireTimeoutMs: number;
    /** Server-side statement_timeout for every connection. Default 15000 ms. */
    readonly statementTimeoutMs: number;
    /** Run fixed-text statements as named prepared statements (db/runSql.ts, `name`). Default true. */
    readonly preparedStatements: boolean;
  };
  readonly migrations: {
    /** `lock_timeout` of each start-up migration's transaction; a timed-out one is rolled back and retried. Default 500 ms:
     *  below PostgreSQL's deadlock_timeout (1 s), so in a lock cycle with a producer the migration gives up first. */
    readonly lockTimeoutMs: number;
    /** How long a migration is retried on lock timeouts before start-up fails. Default 300000 ms. */
    readonly retryForMs: number;
  };
  /** Grace period for in-flight work on SIGINT/SIGTERM. Default 10000 ms. */
  readonly shutdownTimeoutMs: number;
  /** Serve GraphiQL at /graphql. Default: on outside production. */
  readonly graphiqlEnabled: boolean;
  /** The built console served at / (LAZARUS_CONSOLE_DIR). Default: this checkout's web/dist. */
  readonly consoleDir: string;
  readonly http: {
    /** Answer introspection queries. Default: on outside production. */
    readonly introspection: boolean;
    /** Other origins allowed to call the API from a browser, over HTTP, SSE and WebSocket; empty (the default) allows none. */
    readonly corsOrigins: readonly string[];
    /** Body cap for ordinary requests. Default 512 KiB. */
    readonly maxBodyBytes: number;
    /** Body cap for batch ingest (`recordDeadLetters`). Default 16 MiB. */
    readonly maxBatchBodyBytes: number;
    /** Mutations per principal per minute across all instances; 0 disables. Default 600. */
    readonly mutationsPerMinute: number;
  };
  /**
   * API keys from LAZARUS_API_KEYS, comma-separated `name:role:token` or `name:role:sha256=<hex>`.
   * Only SHA-256 hashes are kept. Empty: every caller is the local admin, allowed on loopback only.
   */
  readonly apiKeys: readonly ApiKeyConfig[];
  /** Start without API keys on a non-loopback address (LAZARUS_ALLOW_INSECURE). Default false. */
  readonly allowInsecure: boolean;
  readonly writes: {
    /** LAZARUS_EVENT_TYPES (comma-separated): producers may record only these. Default: any. */
    readonly allowedEventTypes: readonly string[];
    /** A requeue by filter matching more rows than this becomes a throttled redrive. Default 1000. */
    readonly redriveThreshold: number;
    /** Default redrive rate in events per second. Default 100. */
    readonly redriveRatePerSecond: number;
  };
  readonly retry: {
    /** Run the retry loop and the alert deliverer in this process (RETRY_ENABLED). Default true. */
    readonly enabled: boolean;
    /** Longest wait between passes when no wake-up hint arrives. Default 1000 ms. */
    readonly pollIntervalMs: number;
    /** Events claimed per pass. Default 100. */
    readonly batchSize: number;
    /** Deliveries in flight at once in this process. Default 10. */
    readonly concurrency: number;
    /** Lease length; renewed every third of it while a delivery runs. Default 30 s. */
    readonly leaseSeconds: number;
    /** Connections of the retry loop's own pool, apart from the API's. Default 4. */
    readonly poolMax: number;
    /**
     * Claim the next batch while the last one delivers (RETRY_CLAIM_AHEAD), so the target never
     * waits for a claim; false claims it once every event of the last one has started. Default true.
     */
    readonly claimAhead: boolean;
    /**
     * Purge SUCCEEDED/RESOLVED/DISCARDED events older than this many days; 0 keeps them. Default 30.
     * Retention is a job of its own: it runs with the retry loop disabled too.
     */
    readonly retentionDays: number;
  };
  readonly live: {
    /**
     * How often the change feed reads by cursor when no NOTIFY hint wakes it (LIVE_POLL_MS). Lower it
     * when producers write with `lazarus.change_hints = 'off'`: their changes reach subscribers at
     * the next poll. Default 1000 ms.
     */
    readonly pollMs: number;
  };
  readonly metrics: {
    /** Distinct `event_type` label values per metric on /metrics; the rest are `_other`. Default 50. */
    readonly maxEventTypes: number;
  };
  /**
   * Broker bridges to run (LAZARUS_BRIDGES, JSON, or LAZARUS_BRIDGES_FILE, a JSON file): each a
   * `{ name, kind, settings }`. Here only their shape is checked; each kind checks its settings at
   * start-up (src/workers/bridges). Default none.
   */
  readonly bridges: readonly BridgeDeclaration[];
  readonly alerts: {
    /**
     * How often metric alert rules (backlog, oldest pending age, exhausted rate) are evaluated; 0 turns
     * evaluation off in this process. Runs with the retry loop disabled too. Default 15000 ms.
     */
    readonly evaluateIntervalMs: number;
  };
}

export interface BridgeDeclaration {
  /** Unique; names the bridge in GraphQL, /metrics, logs and origin.bridge. */
  readonly name: string;
  /** A bridge kind, e.g. "rabbitmq" (src/workers/bridges/registry.ts). */
  readonly kind: string;
  /** The kind's settings; may hold credentials, which are never shown. */
  readonly settings: Readonly<Record<string, unknown>>;
}

export interface ApiKeyConfig {
  /** Recorded as the actor in history. */
  readonly name: string;
  readonly role: 'viewer' | 'operator' | 'admin';
  /** SHA-256 of the bearer token, 32 bytes. */
  readonly tokenSha256: Buffer;
}

/** Validates the environment; throws one ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  const isProduction = e.NODE_ENV === 'production';
  return Object.freeze({
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT ?? (isProduction ? 'json' : 'pretty'),
    databaseUrl: e.DATABASE_URL,
    dataDir: e.LAZARUS_DATA_DIR,
    embeddedPgPort: e.LAZARUS_EMBEDDED_PG_PORT,
    db: Object.freeze({
      poolMax: e.DATABASE_POOL_MAX,
      acquireTimeoutMs: e.DATABASE_POOL_ACQUIRE_TIMEOUT_MS,
      statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
      preparedStatements: e.DATABASE_PREPARED_STATEMENTS,
    }),
    migrations: Object.freeze({ lockTimeoutMs: e.MIGRATION_LOCK_TIMEOUT_MS, retryForMs: e.MIGRATION_RETRY_FOR_MS }),
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    graphiqlEnabled: e.GRAPHIQL_ENABLED ?? !isProduction,
    consoleDir: e.LAZARUS_CONSOLE_DIR ?? fileURLToPath(new URL('../web/dist', import.meta.url)),
    http: Object.freeze({
      introspection: e.GRAPHQL_INTROSPECTION ?? !isProduction,
      corsOrigins: Object.freeze(e.CORS_ORIGINS),
      maxBodyBytes: e.MAX_BODY_BYTES,
      maxBatchBodyBytes: Math.max(e.MAX_BATCH_BODY_BYTES, e.MAX_BODY_BYTES),
      mutationsPerMinute: e.RATE_LIMIT_MUTATIONS_PER_MINUTE,
    }),
    apiKeys: Object.freeze(parseApiKeys(e.LAZARUS_API_KEYS ?? '')),
    allowInsecure: e.LAZARUS_ALLOW_INSECURE,
    writes: Object.freeze({
      allowedEventTypes: Object.freeze((e.LAZARUS_EVENT_TYPES ?? '').split(',').map((s) => s.trim()).filter(Boolean)),
      redriveThreshold: e.LAZARUS_REDRIVE_THRESHOLD,
      redriveRatePerSecond: e.LAZARUS_REDRIVE_RATE_PER_SECOND,
    }),
    retry: Object.freeze({
      enabled: e.RETRY_ENABLED,
      pollIntervalMs: e.RETRY_POLL_INTERVAL_MS,
      batchSize: e.RETRY_BATCH_SIZE,
      concurrency: e.RETRY_CONCURRENCY,
      leaseSeconds: e.RETRY_LEASE_SECONDS,
      poolMax: e.RETRY_POOL_MAX,
      claimAhead: e.RETRY_CLAIM_AHEAD,
      retentionDays: e.RETENTION_DAYS,
    }),
    live: Object.freeze({ pollMs: e.LIVE_POLL_MS }),
    metrics: Object.freeze({ maxEventTypes: e.LAZARUS_METRICS_MAX_EVENT_TYPES }),
    alerts: Object.freeze({ evaluateIntervalMs: e.LAZARUS_ALERT_EVALUATE_INTERVAL_MS }),
    bridges: Object.freeze(readBridgeDeclarations(e.LAZARUS_BRIDGES, e.LAZARUS_BRIDGES_FILE)),
  });
}

function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === value;
  } catch {
    return false;
  }
}

/** Parses LAZARUS_API_KEYS; errors name the entry by position, never echo a token. */
export function parseApiKeys(text: string): ApiKeyConfig[] {
  const keys: ApiKeyConfig[] = [];
  const entries = text.split(',').map((s) => s.trim()).filter(Boolean);
  entries.forEach((entry, i) => {
    const [name, role, ...rest] = entry.split(':');
    const secret = rest.join(':');
    const where = `LAZARUS_API_KEYS entry ${i + 1}`;
    if (!name || !/^[\w.@-]{1,100}$/.test(name)) throw new ConfigError(`${where}: name must be 1-100 letters, digits, _ . @ -`);
    if (role !== 'viewer' && role !== 'operator' && role !== 'admin') throw new ConfigError(`${where} (${name}): role must be viewer, operator or admin`);
    if (keys.some((k) => k.name === name)) throw new ConfigError(`${where}: duplicate name ${name}`);
    let tokenSha256: Buffer;
    if (secret.startsWith('sha256=')) {
      if (!/^[0-9a-fA-F]{64}$/.test(secret.slice(7))) throw new ConfigError(`${where} (${name}): sha256= needs 64 hex digits`);
      tokenSha256 = Buffer.from(secret.slice(7), 'hex');
    } else {
      if (secret.length < MIN_API_TOKEN_LENGTH) throw new ConfigError(`${where} (${name}): token must be at least ${MIN_API_TOKEN_LENGTH} characters`);
      tokenSha256 = createHash('sha256').update(secret).digest();
    }
    keys.push(Object.freeze({ name, role, tokenSha256 }));
  });
  return keys;
}

const BRIDGE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

function readBridgeDeclarations(text: string | undefined, file: string | undefined): BridgeDeclaration[] {
  if (text !== undefined && file !== undefined) throw new ConfigError('set LAZARUS_BRIDGES or LAZARUS_BRIDGES_FILE, not both');
  let where = 'LAZARUS_BRIDGES';
  if (file !== undefined) {
    where = `LAZARUS_BRIDGES_FILE (${file})`;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`${where}: cannot read the file: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  }
  if (text === undefined || text.trim() === '') return [];
  return parseBridgeDeclarations(text, where);
}

/** Parses a bridges declaration: a JSON array of { name, kind, settings }. Errors name the bridge and field, never a value. */
export function parseBridgeDeclarations(text: string, where = 'LAZARUS_BRIDGES'): BridgeDeclaration[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ConfigError(`${where}: not JSON; expected an array like [{"name": "orders", "kind": "rabbitmq", "settings": {…}}]`);
  }
  if (!Array.isArray(value)) throw new ConfigError(`${where}: must be a JSON array of bridges`);
  const names = new Set<string>();
  return value.map((item: unknown, i) => {
    const at = `${where}: bridge ${i + 1}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new ConfigError(`${at}: must be an object with name, kind and settings`);
    const { name, kind, settings, ...rest } = item as Record<string, unknown>;
    if (typeof name !== 'string' || !BRIDGE_NAME.test(name)) throw new ConfigError(`${at}: name must be 1-100 letters, digits, _ . - (starting with a letter or digit)`);
    const named = `${where}: bridge "${name}"`;
    if (names.has(name)) throw new ConfigError(`${named}: name is declared twice`);
    names.add(name);
    if (typeof kind !== 'string' || kind === '') throw new ConfigError(`${named}: kind must be a bridge kind, e.g. "rabbitmq"`);
    if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) throw new ConfigError(`${named}: settings must be an object`);
    const unknown = Object.keys(rest);
    if (unknown.length) throw new ConfigError(`${named}: unknown field ${unknown[0]} (a bridge has name, kind and settings)`);
    return Object.freeze({ name, kind, settings: Object.freeze({ ...settings }) });
  });
}

function isPostgresUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'postgres:' || url.protocol === 'postgresql:') && url.hostname !== '';
  } catch {
    return false;
  }
}
