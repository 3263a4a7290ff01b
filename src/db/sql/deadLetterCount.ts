// Counts of the dead letters matching a filter (only run when a count is selected). A filter that
// reads only dead_letters' own columns (isEventFilter) counts dead_letters alone: every event has
// its state row (the insert trigger writes it), so the view's join adds a state lookup per match
// and nothing else. 2.5M payload matches at 10M rows: 3.6-3.8 s alone, 8.6-8.7 s through the view
// (docs/benchmarks.md, Session 15).
import { Prisma } from '../../generated/prisma/client.ts';
import { deadLetterSource } from './deadLetterWhere.ts';

/** Exact: reads every matching row (or its index entry). */
export function deadLetterCountSql(where: Prisma.Sql, isEventFilter = false): Prisma.Sql {
  return Prisma.sql`select count(*)::int as count from ${deadLetterSource(isEventFilter)} d where ${where}`;
}

/** Up to `limit + 1`: stops after that many matches, so a count above `limit` costs no more. */
export function deadLetterCountUpToSql(where: Prisma.Sql, limit: number, isEventFilter = false): Prisma.Sql {
  return Prisma.sql`select count(*)::int as count from (select 1 from ${deadLetterSource(isEventFilter)} d where ${where} limit ${limit + 1}) m`;
}
