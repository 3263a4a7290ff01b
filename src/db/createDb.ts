import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { Prisma, PrismaClient } from '../generated/prisma/client.ts';

export type Db = PrismaClient;
/** An interactive transaction's client (`db.$transaction(async (tx) => …)`). */
export type DbTx = Prisma.TransactionClient;

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
  /**
   * Run fixed-text statements as named prepared statements (see queryPrepared). Default true; turn
   * off behind a pooler that does not keep them per client (PgBouncer in transaction mode before 1.21).
   */
  preparedStatements?: boolean;
}

export interface DbHandle {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

const pools = new WeakMap<Db, { pool: pg.Pool; preparedStatements: boolean }>();

/**
 * The pg pool under a Db made by createDb, for the few hot statements where Prisma's raw-query path
 * costs measurably: it re-encodes every parameter and result value (a 500-event batch is ~1.5 MB of
 * JSON text), ~12% of ingest time in `npm run bench:ingest`, more for the retry loop's claims.
 */
function poolOf(db: Db): { pool: pg.Pool; preparedStatements: boolean } {
  const entry = pools.get(db);
  if (!entry) throw new Error('this Db was not made by createDb');
  return entry;
}

/**
 * A Prisma.Sql statement run on the Db's pg pool instead of `$queryRaw` (same text, same values).
 * Rows come back as pg gives them: int8 as string (see toBigInts), jsonb parsed, timestamptz as Date.
 * With `prepared`, it runs as that named prepared statement (see queryPrepared): only for a
 * statement whose text is fixed.
 */
export async function queryPg<R extends pg.QueryResultRow>(db: Db, query: Prisma.Sql, prepared?: string): Promise<R[]> {
  const values = query.values as unknown[];
  if (prepared) return queryPrepared<R>(db, prepared, query.text, values);
  return (await poolOf(db).pool.query<R>(query.text, values)).rows;
}

/**
 * A named prepared statement, for fixed-text statements that run many times a second: the change
 * feed's reads, the horizon, ingest, claim and completion. Unnamed statements are parsed and
 * planned on every run: for the change feed's reads that was 0.8 ms of a 0.85 ms statement, at one
 * read per hint. Each connection prepares the name once; PostgreSQL then reuses the plan. The name
 * must always go with the same text. Statements whose text is built per request (pages, counts,
 * stats) are never named: their best plan depends on the values. With the Db's
 * `preparedStatements` off, this runs unnamed.
 */
export async function queryPrepared<R extends pg.QueryResultRow>(db: Db, name: string, text: string, values: unknown[]): Promise<R[]> {
  const { pool, preparedStatements } = poolOf(db);
  return (await pool.query<R>(preparedStatements ? { name: `lazarus_${name}`, text, values } : { text, values })).rows;
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
  pools.set(db, { pool, preparedStatements: options.preparedStatements ?? true });
  return {
    db,
    pool,
    async close() {
      await db.$disconnect();
      await pool.end();
    },
  };
}
