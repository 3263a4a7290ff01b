// Error groups: pages by keyset in four orders, counts, single groups, their history and hours.
import type { Db } from '../db/createDb.ts';
import { likeContains } from '../db/sql/deadLetterWhere.ts';
import { countErrorGroups, readErrorGroupHours, readErrorGroupPage, TREND_HOURS, type ErrorGroupFilterSql, type ErrorGroupOrderField, type ErrorGroupPageRow, type HourCount } from '../db/sql/errorGroupPage.ts';
import { findErrorGroup, findErrorGroupActions, findErrorGroupOrThrow, findErrorGroups } from '../db/models/errorGroups.ts';
import { findErrorHeads } from '../db/sql/errorHeads.ts';
import { errorHeadline } from '../domain/firstFrame.ts';
import { decodePageCursor, encodePageCursor, PageArgumentError } from './pageCursor.ts';

export { countErrorGroups, findErrorGroupActions as readErrorGroupActions, findErrorGroup as readErrorGroup, findErrorGroupOrThrow as readErrorGroupOrThrow, findErrorGroups as readErrorGroups, likeContains, readErrorGroupHours, TREND_HOURS };
export type { ErrorGroupFilterSql, ErrorGroupOrderField, ErrorGroupPageRow, HourCount };

export const DEFAULT_GROUP_PAGE_SIZE = 50;
export const MAX_GROUP_PAGE_SIZE = 500;

const TIME_KEY = /^[0-9]{4,}-[0-9]{2}-[0-9]{2} [0-9:.]+[+-][0-9:]+$/;
const COUNT_KEY = /^[0-9]{1,19}$/;

export interface ErrorGroupConnectionArgs {
  field: ErrorGroupOrderField;
  filter: ErrorGroupFilterSql;
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

export interface ErrorGroupConnectionPage {
  edges: { cursor: string; node: ErrorGroupPageRow }[];
  pageInfo: { startCursor: string | null; endCursor: string | null; hasNextPage: boolean; hasPreviousPage: boolean };
  filter: ErrorGroupFilterSql;
}

/** One page of `errorGroups`, forward only; TREND counts the hours up to `now`. */
export async function readErrorGroupConnection(db: Db, args: ErrorGroupConnectionArgs, now: Date): Promise<ErrorGroupConnectionPage> {
  if (args.last != null || args.before != null) throw new PageArgumentError('errorGroups pages forward only: use first and after', { argument: 'last' });
  const first = args.first ?? DEFAULT_GROUP_PAGE_SIZE;
  if (first < 1 || first > MAX_GROUP_PAGE_SIZE) throw new PageArgumentError(`first must be between 1 and ${MAX_GROUP_PAGE_SIZE}`, { argument: 'first' });
  const { field, filter } = args;
  const after = args.after != null ? decodePageCursor(args.after, [field], field === 'LAST_SEEN' ? TIME_KEY : COUNT_KEY, 'after') : null;
  const rows = await readErrorGroupPage(db, { filter, field, after, limit: first + 1, now });
  const edges = rows.slice(0, first).map((node) => ({ cursor: encodePageCursor([field], node), node }));
  return {
    edges,
    pageInfo: {
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
      hasNextPage: rows.length > first,
      hasPreviousPage: after !== null,
    },
    filter,
  };
}

/** Per event id: its error's headline (errorHeadline: the stack's first frame, else the message's first line). */
export async function readErrorHeadlines(db: Db, ids: readonly bigint[]): Promise<Map<bigint, string>> {
  return new Map((await findErrorHeads(db, ids)).map((e) => [e.id, errorHeadline(e)]));
}
