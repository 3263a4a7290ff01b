// The one way hand-written SQL runs (the other is Prisma's model API). Every statement lives in its
// own file under db/sql and is built as a Prisma.Sql (values bound, never concatenated); this file
// runs it. check:structure refuses `$queryRaw`, `$executeRaw` and pg's `.query(` anywhere else in src/.
import pg from 'pg';
import { Prisma } from '../generated/prisma/client.ts';
import { poolOf, type Db, type DbTx } from './createDb.ts';
import { parseJsonKeepingNumbers } from './exactJson.ts';

export interface RunSqlOptions {
  /**
   * Run as the named prepared statement `lazarus_<name>`, for a statement whose text is fixed and
   * that runs many times a second: the change feed's reads, the horizon, ingest, claim and
   * completion. Unnamed statements are parsed and planned on every run: for the change feed's reads
   * that was 0.8 ms of a 0.85 ms statement, at one read per hint. Each connection prepares the name
   * once; PostgreSQL then reuses the plan. A name must always go with the same text. Statements
   * whose text is built per request (pages, counts, stats) are never named: their best plan depends
   * on the values. Ignored when the Db's `preparedStatements` is off and inside a transaction.
   */
  name?: string;
}

/**
 * Runs `sql` and returns its rows, typed as Prisma's `$queryRaw` types them: int8 and oid as
 * bigint, numeric as Prisma.Decimal, date and timestamp (read as UTC) and timestamptz as Date, json
 * parsed, int4 and float8 as number. On the pool, json keeps the numbers a double cannot carry
 * (parseJsonKeepingNumbers), and isExactJson tells such values from those Prisma parsed.
 *
 * On a Db made by createDb it runs on that Db's pg pool: Prisma's raw-query path re-encodes every
 * parameter and result value (a 500-event batch is ~1.5 MB of JSON text), ~12% of ingest time in
 * `npm run bench:ingest`, more for the retry loop's claims. On an interactive transaction's client
 * (`db.$transaction(async (tx) => …)`) it runs through `tx.$queryRaw`, on the transaction's own
 * connection, which the pool cannot join.
 */
export async function runSql<R>(db: Db | DbTx, sql: Prisma.Sql, options?: RunSqlOptions): Promise<R[]> {
  const entry = poolOf(db);
  if (!entry) return db.$queryRaw<R[]>(sql);
  const name = options?.name && entry.preparedStatements ? `lazarus_${options.name}` : undefined;
  const result = await entry.pool.query({ name, text: sql.text, values: sql.values as unknown[], types: PRISMA_TYPES });
  return result.rows as R[];
}

// The objects and arrays runSql parsed from json: a copy of a row still holds them.
const exactValues = new WeakSet<object>();

function parseExactJson(text: string): unknown {
  const value = parseJsonKeepingNumbers(text);
  if (value !== null && typeof value === 'object') exactValues.add(value);
  return value;
}

/**
 * Whether `value` (an object or array) is json runSql read on a pool, with every number as stored.
 * Prisma's model API (and `$queryRaw`) parse json with JSON.parse, which rounds 12345678901234567890.
 */
export const isExactJson = (value: object): boolean => exactValues.has(value);

// pg's parsers where they differ from what $queryRaw returns; every other type keeps pg's own
// (timestamptz included: pg reads the offset PostgreSQL sends, whatever the session's TimeZone).
const OID = { INT8: 20, OID: 26, JSON: 114, JSONB: 3802, DATE: 1082, TIMESTAMP: 1114, NUMERIC: 1700, INT8_ARRAY: 1016, NUMERIC_ARRAY: 1231 };
const parserOf = pg.types.getTypeParser as (oid: number, format?: string) => (text: string) => unknown;
const textArray = parserOf(1009) as (text: string) => (string | null)[];
const arrayOf = <T>(parse: (text: string) => T) => (text: string) => textArray(text).map((v) => (v === null ? null : parse(v)));
const PARSERS: Record<number, (text: string) => unknown> = {
  [OID.INT8]: BigInt,
  [OID.OID]: BigInt,
  [OID.NUMERIC]: (text) => new Prisma.Decimal(text),
  // A number a double cannot carry stays as its text, and JSON.stringify prints it back exactly.
  [OID.JSON]: parseExactJson,
  [OID.JSONB]: parseExactJson,
  [OID.DATE]: (text) => new Date(text),
  [OID.TIMESTAMP]: (text) => new Date(`${text.replace(' ', 'T')}+00:00`),
  [OID.INT8_ARRAY]: arrayOf(BigInt),
  [OID.NUMERIC_ARRAY]: arrayOf((text) => new Prisma.Decimal(text)),
};
const PRISMA_TYPES = {
  getTypeParser: (oid: number, format?: string) =>
    (format === 'text' || format === undefined) && PARSERS[oid] ? PARSERS[oid] : parserOf(oid, format),
} as pg.CustomTypesConfig;
