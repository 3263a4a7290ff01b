// The rows an operator change applies to, as a CTE body over `dead_letters_current d`. Every change
// statement re-checks `d.version = t.version` in its UPDATE/DELETE: under READ COMMITTED a row
// changed by a concurrent writer is re-evaluated after that writer commits, its version no longer
// matches, and the row is skipped (ids: the whole statement aborts via lazarus_expect_rows).
import { Prisma } from '../../generated/prisma/client.ts';
import type { DeadLetterStatus } from '../../generated/prisma/enums.ts';

export type WriteTarget =
  /** Explicit rows at the versions the service read: all change, or none (CONFLICT). */
  | { kind: 'ids'; rows: { id: bigint; version: number }[] }
  /** Whatever matches now, in id order, optionally one batch after a resume point. */
  | { kind: 'filter'; where: Prisma.Sql; afterId?: bigint; limit?: number };

export const TARGET_COLUMNS = Prisma.sql`d.id, d.version, d.status, d.attempts, d.next_attempt_at, d.payload`;

export function targetCte(target: WriteTarget, allowed: DeadLetterStatus[]): Prisma.Sql {
  if (target.kind === 'ids') {
    const ids = target.rows.map((r) => r.id.toString());
    const versions = target.rows.map((r) => r.version);
    return Prisma.sql`
      select ${TARGET_COLUMNS}
        from dead_letters_current d
        join unnest(${ids}::bigint[], ${versions}::int[]) as e(id, version) on e.id = d.id and e.version = d.version`;
  }
  return Prisma.sql`
    select ${TARGET_COLUMNS}
      from dead_letters_current d
     where (${target.where}) and d.status::text = any(${allowed}::text[]) and d.id > ${(target.afterId ?? 0n).toString()}::bigint
     order by d.id
     ${target.limit ? Prisma.sql`limit ${target.limit}::int` : Prisma.empty}`;
}

/** Rows the statement must change: all of them for ids, no check (-1) for a filter. */
export function expectedRows(target: WriteTarget): number {
  return target.kind === 'ids' ? target.rows.length : -1;
}

/** How many changed ids a statement returns (the rest are only counted). */
export const RESULT_SAMPLE = 100;

export interface ChangeResult {
  count: number;
  /** The first RESULT_SAMPLE changed ids, ascending. */
  ids: bigint[];
}

/** True when the statement aborted because a row changed under it (SQLSTATE LZ409). */
export function isExpectRowsViolation(error: unknown): boolean {
  return sqlStateOf(error) === 'LZ409';
}

/** Digs the SQLSTATE out of a Prisma/driver-adapter error chain. */
export function sqlStateOf(error: unknown): string | undefined {
  for (let e = error as Record<string, unknown> | undefined, depth = 0; e && depth < 6; depth++) {
    const meta = e.meta as Record<string, unknown> | undefined;
    const adapter = (meta?.driverAdapterError as Record<string, unknown> | undefined)?.cause as Record<string, unknown> | undefined;
    const code = adapter?.originalCode ?? (meta?.code as string | undefined) ?? e.originalCode ?? (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined);
    if (typeof code === 'string') return code;
    e = e.cause as Record<string, unknown> | undefined;
  }
  if (error instanceof Error && /LZ409|expected to change/.test(error.message)) return 'LZ409';
  return undefined;
}
