import DataLoader from 'dataloader';
import { isExactJson, readExactJson, type ExactJsonColumn, type ExactJsonTable } from '../../reads/exactJson.ts';
import type { GraphQLContext } from './builder.ts';

// Pages come from hand-written SQL, whose json keeps numbers a double cannot carry; a row read
// through Prisma's model API (one dead letter, a mutation's result, a history) had its json parsed
// by JSON.parse, so `{"id": 12345678901234567890}` would go out as 12345678901234567000. Such rows'
// columns are read again, one statement per column for all the rows a request asks for together.
const loaders = new WeakMap<GraphQLContext, Map<string, DataLoader<bigint, unknown>>>();

/** `row[column]` with every number as PostgreSQL stores it. */
export function exactJson<T extends ExactJsonTable>(
  ctx: GraphQLContext, table: T, column: ExactJsonColumn<T>, row: { id: bigint },
): unknown {
  const value = (row as unknown as Record<string, unknown>)[column];
  if (value === null || value === undefined || !hasNumber(value) || (typeof value === 'object' && isExactJson(value))) return value;
  let byColumn = loaders.get(ctx);
  if (!byColumn) loaders.set(ctx, (byColumn = new Map()));
  const key = `${table}.${column}`;
  let loader = byColumn.get(key);
  if (!loader) {
    loader = new DataLoader<bigint, unknown>(async (ids) => {
      const byId = await readExactJson(ctx.db, table, column, [...new Set(ids)]);
      return ids.map((id) => byId.get(id));
    }, { cache: false });
    byColumn.set(key, loader);
  }
  // A row deleted meanwhile keeps the value read with it.
  return loader.load(row.id).then((exact) => (exact === undefined ? value : exact));
}

// Without a number, JSON.parse lost nothing.
function hasNumber(value: unknown): boolean {
  if (typeof value === 'number') return true;
  if (value === null || typeof value !== 'object') return false;
  return Object.values(value).some(hasNumber);
}
