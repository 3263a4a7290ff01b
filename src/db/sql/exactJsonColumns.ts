// The JSON that producers sent, read again with every number as stored, for rows Prisma's model API
// read: it parses json with JSON.parse, which rounds 12345678901234567890 to 12345678901234567000.
import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';

/** Tables and their json columns that hold what producers sent (payloads, headers, their history). */
export const EXACT_JSON_COLUMNS = {
  dead_letters: ['payload', 'headers', 'origin'],
  dead_letter_actions: ['before', 'after'],
} as const;

export type ExactJsonTable = keyof typeof EXACT_JSON_COLUMNS;
export type ExactJsonColumn<T extends ExactJsonTable> = (typeof EXACT_JSON_COLUMNS)[T][number];

/** `column` of the rows with these ids, by id; a row deleted meanwhile is absent. */
export async function readExactJson<T extends ExactJsonTable>(db: Db, table: T, column: ExactJsonColumn<T>, ids: readonly bigint[]): Promise<Map<bigint, unknown>> {
  if (!(EXACT_JSON_COLUMNS[table] as readonly string[]).includes(column)) throw new Error(`${table}.${column} is not an exact JSON column`);
  const rows = await runSql<{ id: bigint; value: unknown }>(db, Prisma.sql`
    select id, ${Prisma.raw(`"${column}"`)} as value from ${Prisma.raw(table)} where id = any(${ids.map(String)}::bigint[])`);
  return new Map(rows.map((r) => [r.id, r.value]));
}
