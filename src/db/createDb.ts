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
   * Run fixed-text statements as named prepared statements (see runSql's `name`). Default true; turn
   * off behind a pooler that does not keep them per client (PgBouncer in transaction mode before 1.21).
   */
  preparedStatements?: boolean;
}

export interface DbHandle {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

/**
 * JIT compilation is off on Lazarus's own connections. PostgreSQL compiles a statement whose
 * estimated cost passes jit_above_cost (100,000), and estimates grow with the table while the
 * statements stay small: at 50,000 due events the claim's check of which types have work was
 * JIT-compiled on every call, 10–12 ms to compile a 0.1 ms query, and the drain ran at a third of
 * its speed (6,345–6,376 against 15,330–18,490 events/s, 173 against 58–63 µs of database CPU an event;
 * docs/benchmarks.md). A URL's own `options` come after it (pg would otherwise let them replace
 * it), so `?options=-c jit=on` there wins.
 */
export function withSessionOptions(url: string): { connectionString: string; options: string } {
  const parsed = URL.parse(url);
  const own = parsed?.searchParams.get('options');
  if (!parsed || !own) return { connectionString: url, options: '-c jit=off' };
  parsed.searchParams.delete('options');
  return { connectionString: parsed.href, options: `-c jit=off ${own}` };
}

const pools = new WeakMap<Db, { pool: pg.Pool; preparedStatements: boolean }>();

/** The pg pool under a Db made by createDb (runSql runs statements on it); undefined for a transaction's client. */
export function poolOf(db: Db | DbTx): { pool: pg.Pool; preparedStatements: boolean } | undefined {
  return pools.get(db as Db);
}

/**
 * A Prisma client over its own bounded pg pool. Every timeout is explicit: acquiring a
 * connection, each statement on the server, and idle transactions, so nothing can hang forever.
 */
export function createDb(url: string, options: DbOptions): DbHandle {
  const pool = new pg.Pool({
    ...withSessionOptions(url),
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
