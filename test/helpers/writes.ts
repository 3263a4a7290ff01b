import type { Principal } from '../../src/api/auth/principal.ts';
import type { DbHandle } from '../../src/db/createDb.ts';
import type { WriteConfig } from '../../src/domain/writeConfig.ts';
import type { GraphQLServer } from '../../src/api/server.ts';
import { testServer } from './graphql.ts';

export const OPERATOR: Principal = { name: 'ops-alice', role: 'operator' };

export function writeServer(handle: DbHandle, principal: Principal | null = OPERATOR, writeConfig?: WriteConfig): GraphQLServer {
  return testServer(handle.db, { authenticate: () => principal, ...(writeConfig && { writeConfig }) });
}

/** md5 of every write-side table's full contents, to prove a refused request wrote nothing. */
export async function tablesDigest(handle: DbHandle): Promise<string> {
  const { rows } = await handle.pool.query<{ digest: string }>(`
    select md5(
      coalesce((select string_agg(t::text, '|' order by id) from dead_letters_current t), '') || '#' ||
      coalesce((select string_agg(t::text, '|' order by id) from dead_letter_actions t), '') || '#' ||
      coalesce((select string_agg(t::text, '|' order by id) from redrives t), '') || '#' ||
      (select last_value::text from dead_letters_id_seq)) as digest`);
  return rows[0]!.digest;
}

/**
 * md5 over every row of every Lazarus table (every table in the schema but Prisma's migration
 * log) and every sequence's position: a request that wrote anything anywhere changes it.
 */
export async function everyTableDigest(handle: DbHandle): Promise<string> {
  const { rows: tables } = await handle.pool.query<{ name: string }>(
    `select quote_ident(tablename) as name from pg_tables
      where schemaname = current_schema() and tablename <> '_prisma_migrations' order by tablename`,
  );
  const { rows: sequences } = await handle.pool.query<{ name: string }>(
    `select quote_ident(sequencename) as name from pg_sequences where schemaname = current_schema() order by sequencename`,
  );
  if (tables.length < 7) throw new Error(`expected every Lazarus table, found ${tables.map((t) => t.name).join(', ')}`);
  const parts = [
    ...tables.map((t) => `(select coalesce(string_agg(r::text, '|' order by r::text), '') from ${t.name} r)`),
    ...sequences.map((s) => `(select last_value::text || is_called::text from ${s.name})`),
  ];
  const { rows } = await handle.pool.query<{ digest: string }>(`select md5(concat_ws('#', ${parts.join(', ')})) as digest`);
  return rows[0]!.digest;
}
