import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { Prisma, PrismaClient } from '../generated/prisma/client.ts';

export type Db = PrismaClient;

export interface DbOptions {
  /** Connections in this pool. */
  poolMax: number;
  /** How long a query waits for a free connection before failing (pg-pool waits forever by default). */
  acquireTimeoutMs: number;
  /** Server-side statement_timeout for each connection. */
  statementTimeoutMs: number;
  /** Shows in pg_stat_activity, so each pool can be told apart (and terminated) by name. */
  applicationName: string;
  /** Called when an idle pooled connection breaks (e.g. PostgreSQL restarted); the pool replaces it. */
  onIdleError?: (error: Error) => void;
}

export interface DbHandle {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

const pools = new WeakMap<Db, pg.Pool>();

/**
 * The pg pool under a Db made by createDb, for the few hot statements where Prisma's raw-query path
 * costs measurably: it re-encodes every parameter and result value (a 500-event batch is ~1.5 MB of
 * JSON text), ~12% of ingest time in `npm run bench:ingest`, more for the retry loop's claims.
 */
function poolOf(db: Db): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('this Db was not made by createDb');
  return pool;
}

/**
 * A Prisma.Sql statement run on the Db's pg pool instead of `$queryRaw` (same text, same values).
 * Rows come back as pg gives them: int8 as string (see toBigInts), jsonb parsed, timestamptz as Date.
 * With `prepared`, it runs as that named prepared statement (see queryPrepared).
 */
export async function queryPg<R extends pg.QueryResultRow>(db: Db, query: Prisma.Sql, prepared?: string): Promise<R[]> {
  const values = query.values as unknown[];
  if (prepared) return queryPrepared<R>(db, prepared, query.text, values);
  return (await poolOf(db).query<R>(query.text, values)).rows;
}

/** pg's own parser of timestamptz text, as queryPg applies it. */
export const parseTimestamp = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ) as (text: string) => Date;

// pg's parsers, but timestamptz stays PostgreSQL's text.
const TIMESTAMPS_AS_TEXT: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.TIMESTAMPTZ ? String : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

// Names for statement texts built per request, given to the first MAX_NAMED_TEXTS texts seen in
// this process (one name always goes with one text). Past the cap, texts run unnamed: each
// connection keeps every statement it has prepared until it closes.
const MAX_NAMED_TEXTS = 100;
const namedTexts = new Map<string, string>();
function nameOfText(text: string): string | undefined {
  let name = namedTexts.get(text);
  if (name === undefined && namedTexts.size < MAX_NAMED_TEXTS) namedTexts.set(text, (name = `lazarus_text_${namedTexts.size}`));
  return name;
}

/**
 * queryPg, with timestamptz values left as PostgreSQL writes them (see parseTimestamp). With
 * `prepare`, the text runs as a named prepared statement (see queryPrepared), for statements whose
 * plan does not depend on their values: PostgreSQL may reuse one plan for all of them.
 */
export async function queryPgTimestampsAsText<R extends pg.QueryResultRow>(db: Db, query: Prisma.Sql, options: { prepare?: boolean } = {}): Promise<R[]> {
  const name = options.prepare ? nameOfText(query.text) : undefined;
  return (await poolOf(db).query<R>({ name, text: query.text, values: query.values as unknown[], types: TIMESTAMPS_AS_TEXT })).rows;
}

/**
 * A named prepared statement, for fixed-text statements that run many times a second. Unnamed
 * statements are parsed and planned on every run: for the change feed's reads that was 0.8 ms of
 * a 0.85 ms statement, at one read per hint. Each connection prepares the name once; PostgreSQL
 * then reuses the plan. The name must always go with the same text.
 */
export async function queryPrepared<R extends pg.QueryResultRow>(db: Db, name: string, text: string, values: unknown[]): Promise<R[]> {
  return (await poolOf(db).query<R>({ name: `lazarus_${name}`, text, values })).rows;
}

/** int8 columns arrive from pg as text; the rest of the code carries them as bigint, as Prisma does. */
export function toBigInts<T>(row: Record<string, unknown>, keys: readonly string[]): T {
  for (const key of keys) if (row[key] != null) row[key] = BigInt(row[key] as string);
  return row as T;
}

/**
 * A Prisma client over its own bounded pg pool. Every timeout is explicit: acquiring a
 * connection, each statement on the server, and idle transactions, so nothing can hang forever.
 */
export function createDb(url: string, options: DbOptions): DbHandle {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolMax,
    connectionTimeoutMillis: options.acquireTimeoutMs,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    statement_timeout: options.statementTimeoutMs,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
    query_timeout: options.statementTimeoutMs + 5_000,
    application_name: options.applicationName,
  });
  // An idle client losing its connection emits 'error' on the pool; without a listener Node would
  // crash. The pool drops that client and makes a new one on demand, so reporting is enough.
  pool.on('error', (error) => options.onIdleError?.(error));
  const db = new PrismaClient({ adapter: new PrismaPg(pool) });
  pools.set(db, pool);
  return {
    db,
    pool,
    async close() {
      await db.$disconnect();
      await pool.end();
    },
  };
}
