import type { GraphQLResolveInfo } from 'graphql';
import type { Db } from '../../reads/db.ts';
import {
  DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, readDeadLetterConnection,
  type BoundedCount, type Counts, type DeadLetterConnectionArgs, type DeadLetterConnectionPage, type DeadLetterOrderField,
} from '../../reads/deadLetterPages.ts';
import { deadLetterColumnsSelected } from './selection.ts';
import { builder } from './builder.ts';
import { DeadLetterRef } from './deadLetter.ts';
import { DeadLetterFilterInput, parseDeadLetterFilter } from './deadLetterFilter.ts';
import { badUserInput, pageArgumentsAsBadInput } from './errors.ts';

const DEFAULT_COUNT_LIMIT = 10_000;
const MAX_COUNT_LIMIT = 100_000;

const BoundedCountRef = builder.objectRef<BoundedCount>('BoundedCount').implement({
  description: 'A count that stops at a limit: "10,000+" rather than reading every matching row.',
  fields: (t) => ({
    count: t.exposeInt('count', { description: 'The number of matching rows when `exact`, otherwise the limit: there are more.' }),
    exact: t.exposeBoolean('exact'),
  }),
});

const ORDER_FIELDS = ['CREATED_AT', 'UPDATED_AT', 'NEXT_ATTEMPT_AT', 'ATTEMPTS'] as const satisfies readonly DeadLetterOrderField[];

export const DeadLetterOrderFieldEnum = builder.enumType('DeadLetterOrderField', {
  description: 'What to sort dead letters by; ties are broken by id in the same direction. NEXT_ATTEMPT_AT puts rows without one last (ascending).',
  values: ORDER_FIELDS,
});

export const OrderDirectionEnum = builder.enumType('OrderDirection', { values: ['ASC', 'DESC'] as const });

export const DeadLetterOrderInput = builder.inputType('DeadLetterOrder', {
  fields: (t) => ({
    field: t.field({ type: DeadLetterOrderFieldEnum, required: true }),
    direction: t.field({ type: OrderDirectionEnum, required: true }),
  }),
});

/** boundedCount's limit, when it is one. */
function countLimit(limit: number): number {
  if (limit < 1 || limit > MAX_COUNT_LIMIT) throw badUserInput(`limit must be between 1 and ${MAX_COUNT_LIMIT}`, { argument: 'limit' });
  return limit;
}

/** boundedCount's answer; its limit is checked before anything is counted. */
function countUpTo(counts: Counts, limit: number): Promise<BoundedCount> {
  return counts.upTo(countLimit(limit));
}

/** The `deadLetters` connection for these arguments (shared with `ErrorGroup.members`). */
export async function resolveDeadLetterConnection(
  db: Db,
  args: DeadLetterConnectionArgs & { filter?: Parameters<typeof parseDeadLetterFilter>[0] },
  info: GraphQLResolveInfo,
): Promise<DeadLetterConnectionPage> {
  const filter = parseDeadLetterFilter(args.filter);
  return pageArgumentsAsBadInput(() => readDeadLetterConnection(db, filter, args, deadLetterColumnsSelected(info)));
}

builder.queryFields((t) => ({
  deadLetters: t.connection(
    {
      type: DeadLetterRef,
      description: `Dead letters matching the filter, newest first unless \`orderBy\` says otherwise. Pages hold ${DEFAULT_PAGE_SIZE} by default, at most ${MAX_PAGE_SIZE}; use first/after to go forward or last/before to go back, never first and last together. Cursors are positions in the order (keyset), so pages stay consistent while rows are inserted.`,
      args: {
        filter: t.arg({ type: DeadLetterFilterInput }),
        orderBy: t.arg({ type: DeadLetterOrderInput, description: 'Defaults to CREATED_AT DESC.' }),
      },
      resolve: (_root, args, ctx, info) => resolveDeadLetterConnection(ctx.db, args, info),
    },
    {
      name: 'DeadLetterConnection',
      fields: (c) => ({
        totalCount: c.int({
          description:
            'Rows matching the filter (all pages). Counted only when selected: summed from the hourly rollups when the filter uses only statuses, eventTypes, queues, errorKinds and createdAt (partial hours at the range ends are counted from the table), otherwise an exact count(*), which reads every matching row: see boundedCount.',
          resolve: (conn) => (conn as unknown as DeadLetterConnectionPage).counts.total(),
        }),
        boundedCount: c.field({
          type: BoundedCountRef,
          description: `Rows matching the filter, counted up to \`limit\` (default ${DEFAULT_COUNT_LIMIT.toLocaleString('en')}, at most ${MAX_COUNT_LIMIT.toLocaleString('en')}) for filters the rollups cannot answer (error text, payload, sources…), so its cost stays bounded however many rows match. Exact (from the rollups) whenever totalCount would come from them.`,
          args: { limit: c.arg.int({ required: true, defaultValue: DEFAULT_COUNT_LIMIT }) },
          resolve: (conn, args) => countUpTo((conn as unknown as DeadLetterConnectionPage).counts, args.limit),
        }),
      }),
    },
    { name: 'DeadLetterEdge' },
  ),
}));
