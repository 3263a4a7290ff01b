// Error groups: the list, one group with its members and history, and the operator moves.
import type { Principal } from '../auth/principal.ts';
import {
  countErrorGroups, DEFAULT_GROUP_PAGE_SIZE, likeContains, MAX_GROUP_PAGE_SIZE, readErrorGroup, readErrorGroupActions, readErrorGroupConnection, readErrorGroupOrThrow, TREND_HOURS,
  type ErrorGroupConnectionPage, type ErrorGroupFilterSql, type ErrorGroupOrderField,
} from '../../reads/errorGroups.ts';
import { readDeadLetter } from '../../reads/deadLetters.ts';
import { hoursOf } from './errorGroupHours.ts';
import { ErrorGroupNotFoundError, InvalidErrorGroupTransitionError, ValidationError } from '../../domain/errors.ts';
import { MAX_GROUP_NOTE_LENGTH, MAX_GROUP_REASON_LENGTH, moveErrorGroup, type ErrorGroupMove } from '../../domain/errorGroups.ts';
import type { ErrorGroup } from '../../generated/prisma/client.ts';
import { ErrorGroupStatus } from '../../generated/prisma/enums.ts';
import { builder, type GraphQLContext } from './builder.ts';
import { resolveDeadLetterConnection, DeadLetterOrderInput } from './deadLetterConnection.ts';
import { DeadLetterFilterInput, TimeRangeInput } from './deadLetterFilter.ts';
import { ErrorKindEnum } from './enums.ts';
import { badUserInput, pageArgumentsAsBadInput } from './errors.ts';
import { parseId } from './ids.ts';
import { MutationErrorRef } from './writeErrors.ts';

const MAX_LIST = 1000;
const MAX_HOURS = 24 * 14;

/** A group as read: from a page (with its recent count) or from Prisma (counted when asked). */
type ErrorGroupRow = ErrorGroup & { recentCount?: bigint };

export const ErrorGroupStatusEnum = builder.enumType(ErrorGroupStatus, {
  name: 'ErrorGroupStatus',
  description:
    'OPEN: failing and nobody has said otherwise. ACKNOWLEDGED: someone is on it. RESOLVED: no member is unresolved (set by the database when that happens, or by an operator); a new failure reopens it as regressed. IGNORED: still counted, never changed by the database.',
});

const ErrorGroupOrderFieldEnum = builder.enumType('ErrorGroupOrderField', {
  description: `How to order error groups, largest first (ties by id, newest first). TREND: most events in the last ${TREND_HOURS} hours (this UTC hour and the ${TREND_HOURS - 1} before it), counted exactly over the events folded into groups so far: like every group count, it trails a commit by the fold delay (well under a second with the service running).`,
  values: ['LAST_SEEN', 'COUNT', 'UNRESOLVED', 'TREND'] as const satisfies readonly ErrorGroupOrderField[],
});

const ErrorGroupActionRef = builder.prismaObject('ErrorGroupAction', {
  description: 'A status change of an error group: by an operator, or by the database (actor `system`).',
  fields: (t) => ({
    id: t.id({ resolve: (a) => a.id.toString() }),
    fromStatus: t.field({ type: ErrorGroupStatusEnum, nullable: true, description: 'Null for the entry that created the group.', resolve: (a) => a.fromStatus }),
    toStatus: t.field({ type: ErrorGroupStatusEnum, resolve: (a) => a.toStatus }),
    actor: t.exposeString('actor'),
    reason: t.exposeString('reason', { nullable: true }),
    note: t.exposeString('note', { nullable: true, description: 'The note the action set, if any.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const HourCountRef = builder.objectRef<{ start: Date; count: number }>('ErrorGroupHourCount').implement({
  fields: (t) => ({
    start: t.field({ type: 'DateTime', description: 'The UTC hour.', resolve: (h) => h.start }),
    count: t.exposeInt('count', { description: 'Events recorded into the group in that hour.' }),
  }),
});

export const ErrorGroupRef = builder.objectRef<ErrorGroupRow>('ErrorGroup').implement({
  description:
    'Dead letters with the same event type, error kind and signature: the producer’s `fingerprint` when set, else the error signature followed by the top frames of the stack. Kept by the database as events arrive and change (plain SQL inserts included).',
  fields: (t) => ({
    id: t.id({ resolve: (g) => g.id.toString() }),
    eventType: t.exposeString('eventType'),
    errorKind: t.field({ type: ErrorKindEnum, resolve: (g) => g.errorKind }),
    signature: t.exposeString('signature', {
      description:
        'The group’s key beside event type and error kind: the producer’s `fingerprint` when set; else the error signature (`DeadLetter.errorSignature`), then, one per line, up to 5 top frames of the stack as `at <function> (<file>)` with line numbers, addresses and ids removed (none when the stack has no recognisable frame). At most 920 characters.',
    }),
    status: t.field({ type: ErrorGroupStatusEnum, resolve: (g) => g.status }),
    firstSeen: t.field({ type: 'DateTime', resolve: (g) => g.firstSeen }),
    lastSeen: t.field({ type: 'DateTime', resolve: (g) => g.lastSeen }),
    count: t.int({ description: 'Every event ever recorded into the group, deleted ones included.', resolve: (g) => Number(g.totalCount) }),
    unresolvedCount: t.int({ description: 'Members now PENDING, PROCESSING or EXHAUSTED.', resolve: (g) => Number(g.unresolvedCount) }),
    recentCount: t.int({
      description: `Events recorded in the last ${TREND_HOURS} hours (this hour included): what TREND orders by.`,
      resolve: async (g, _args, ctx) =>
        g.recentCount !== undefined ? Number(g.recentCount) : (await hoursOf(ctx, g.id, TREND_HOURS)).reduce((n, h) => n + h.count, 0),
    }),
    queues: t.stringList({ description: 'The queues its events came through (at most 100, sorted).', resolve: (g) => g.queues }),
    sources: t.stringList({ description: 'The sources that recorded its events (at most 100, sorted).', resolve: (g) => g.sources }),
    regressedAt: t.field({ type: 'DateTime', nullable: true, description: 'When a new failure last reopened it after it was RESOLVED.', resolve: (g) => g.regressedAt }),
    note: t.exposeString('note', { nullable: true }),
    createdAt: t.field({ type: 'DateTime', resolve: (g) => g.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (g) => g.updatedAt }),
    sample: t.field({
      type: 'DeadLetter' as never,
      nullable: true,
      description: 'Its first event, while it is stored.',
      resolve: (g, _args, ctx) => (g.sampleDeadLetterId === null ? null : readDeadLetter(ctx.db, g.sampleDeadLetterId)) as never,
    }),
    hourly: t.field({
      type: [HourCountRef],
      description: 'Events recorded per UTC hour, oldest first, for the last `hours` hours (this one included), zeros included: a sparkline.',
      args: { hours: t.arg.int({ required: true, defaultValue: 24 }) },
      resolve: (g, { hours }, ctx) => {
        if (hours < 1 || hours > MAX_HOURS) throw badUserInput(`hours must be between 1 and ${MAX_HOURS}`, { argument: 'hours' });
        return hoursOf(ctx, g.id, hours);
      },
    }),
    history: t.field({
      type: [ErrorGroupActionRef],
      description: 'Every status change, oldest first.',
      resolve: (g, _args, ctx) => readErrorGroupActions(ctx.db, g.id),
    }),
    members: t.field({
      type: 'DeadLetterConnection' as never,
      description: 'Its stored events: `deadLetters` with `filter.groupId` set to this group (any groupId given in `filter` is replaced).',
      args: {
        filter: t.arg({ type: DeadLetterFilterInput }),
        orderBy: t.arg({ type: DeadLetterOrderInput }),
        first: t.arg.int(),
        after: t.arg.string(),
        last: t.arg.int(),
        before: t.arg.string(),
      },
      resolve: (g, args, ctx, info) =>
        resolveDeadLetterConnection(ctx.db, { ...args, filter: { ...(args.filter ?? {}), groupId: g.id.toString() } }, info) as never,
    }),
  }),
});

export const ErrorGroupFilterInput = builder.inputType('ErrorGroupFilter', {
  description: 'Selects error groups. Every field is optional; the fields given must all match (AND). Lists match any of their values.',
  fields: (t) => ({
    ids: t.idList({ description: `At most ${MAX_LIST} ids.` }),
    statuses: t.field({ type: [ErrorGroupStatusEnum] }),
    eventTypes: t.stringList(),
    errorKinds: t.field({ type: [ErrorKindEnum] }),
    queues: t.stringList({ description: 'Groups that saw any of these queues.' }),
    sources: t.stringList({ description: 'Groups that saw any of these sources.' }),
    signatureText: t.string({ description: 'Case-insensitive substring of the signature, 1 to 500 characters, matched literally.' }),
    lastSeen: t.field({ type: TimeRangeInput }),
  }),
});

export function parseGroupFilter(input: typeof ErrorGroupFilterInput.$inferInput | null | undefined): ErrorGroupFilterSql {
  if (!input) return {};
  const capped = <T>(field: string, values: readonly T[]): T[] => {
    if (values.length > MAX_LIST) throw badUserInput(`filter.${field} takes at most ${MAX_LIST} values`, { argument: `filter.${field}` });
    return [...values];
  };
  const filter: ErrorGroupFilterSql = {};
  if (input.ids) filter.ids = capped('ids', input.ids).map((id) => parseId(id, 'filter.ids'));
  if (input.statuses) filter.statuses = capped('statuses', input.statuses);
  if (input.eventTypes) filter.eventTypes = capped('eventTypes', input.eventTypes);
  if (input.errorKinds) filter.errorKinds = capped('errorKinds', input.errorKinds);
  if (input.queues) filter.queues = capped('queues', input.queues);
  if (input.sources) filter.sources = capped('sources', input.sources);
  if (input.signatureText != null) {
    if (input.signatureText.length < 1 || input.signatureText.length > 500) {
      throw badUserInput('filter.signatureText must be 1 to 500 characters', { argument: 'filter.signatureText' });
    }
    filter.signatureLike = likeContains(input.signatureText);
    filter.signatureText = input.signatureText;
  }
  if (input.lastSeen) {
    const { from, to } = input.lastSeen;
    if (from && to && from.getTime() > to.getTime()) throw badUserInput('filter.lastSeen.from is after filter.lastSeen.to', { argument: 'filter.lastSeen' });
    filter.lastSeen = { ...(from ? { from } : {}), ...(to ? { to } : {}) };
  }
  return filter;
}

builder.queryFields((t) => ({
  errorGroups: t.connection(
    {
      type: ErrorGroupRef,
      description: `Error groups matching the filter, ordered by \`orderBy\` (default LAST_SEEN), largest first. Pages hold ${DEFAULT_GROUP_PAGE_SIZE} by default, at most ${MAX_GROUP_PAGE_SIZE}; go forward with first/after (keyset cursors). Under TREND the key moves with the clock, so a later page may repeat or skip a group whose count moved meanwhile.`,
      args: {
        filter: t.arg({ type: ErrorGroupFilterInput }),
        orderBy: t.arg({ type: ErrorGroupOrderFieldEnum, defaultValue: 'LAST_SEEN' }),
      },
      resolve: (_root, args, ctx) =>
        pageArgumentsAsBadInput(() =>
          readErrorGroupConnection(ctx.db, { ...args, field: args.orderBy ?? 'LAST_SEEN', filter: parseGroupFilter(args.filter) }, new Date()),
        ),
    },
    {
      name: 'ErrorGroupConnection',
      fields: (c) => ({
        totalCount: c.int({
          description: 'Groups matching the filter (all pages).',
          resolve: (conn, _args, ctx) => countErrorGroups(ctx.db, (conn as unknown as ErrorGroupConnectionPage).filter),
        }),
      }),
    },
    { name: 'ErrorGroupEdge' },
  ),
  errorGroup: t.field({
    type: ErrorGroupRef,
    nullable: true,
    description: 'One error group, or null when there is none with this id.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => readErrorGroup(ctx.db, parseId(args.id)),
  }),
}));

builder.objectType(ErrorGroupNotFoundError, {
  name: 'ErrorGroupNotFoundError',
  description: 'No error group has this id (code NOT_FOUND).',
  interfaces: [MutationErrorRef],
  isTypeOf: (e) => e instanceof ErrorGroupNotFoundError,
  fields: (t) => ({ id: t.id({ resolve: (e) => e.id.toString() }) }),
});

builder.objectType(InvalidErrorGroupTransitionError, {
  name: 'InvalidErrorGroupTransitionError',
  description: 'The group’s status does not allow this move, e.g. acknowledging a RESOLVED group (code CONFLICT).',
  interfaces: [MutationErrorRef],
  isTypeOf: (e) => e instanceof InvalidErrorGroupTransitionError,
  fields: (t) => ({
    id: t.id({ resolve: (e) => e.id.toString() }),
    from: t.field({ type: ErrorGroupStatusEnum, description: 'The current status.', resolve: (e) => e.from }),
    to: t.field({ type: ErrorGroupStatusEnum, description: 'The status that was refused.', resolve: (e) => e.to }),
  }),
});

const ErrorGroupMoveInput = builder.inputType('ErrorGroupMoveInput', {
  fields: (t) => ({
    id: t.id({ required: true }),
    reason: t.string({ description: `Recorded in the group’s history; at most ${MAX_GROUP_REASON_LENGTH} characters.` }),
    note: t.string({ description: `Replaces the group’s note; at most ${MAX_GROUP_NOTE_LENGTH} characters.` }),
  }),
});

const MOVE_ERRORS = [ValidationError, ErrorGroupNotFoundError, InvalidErrorGroupTransitionError];

const MOVES: Record<string, { move: ErrorGroupMove; description: string }> = {
  acknowledgeErrorGroup: { move: 'ACKNOWLEDGE', description: 'OPEN → ACKNOWLEDGED: someone is on it. It still resolves itself when no member is unresolved.' },
  resolveErrorGroup: {
    move: 'RESOLVE',
    description: 'Marks the group RESOLVED (from OPEN, ACKNOWLEDGED or IGNORED). Its members are untouched: resolve, discard or requeue them with the bulk mutations and `filter: { groupId }`. A new failure reopens it as regressed.',
  },
  ignoreErrorGroup: { move: 'IGNORE', description: 'Marks the group IGNORED: still counted, never reopened or resolved by the database.' },
  reopenErrorGroup: { move: 'REOPEN', description: 'Back to OPEN from ACKNOWLEDGED, RESOLVED or IGNORED.' },
};

const actor = (ctx: GraphQLContext): string => (ctx.principal as Principal).name;

builder.mutationFields((t) =>
  Object.fromEntries(
    Object.entries(MOVES).map(([name, { move, description }]) => [
      name,
      t.field({
        type: ErrorGroupRef,
        authScopes: { operator: true },
        description,
        args: { input: t.arg({ type: ErrorGroupMoveInput, required: true }) },
        errors: { types: MOVE_ERRORS, directResult: true },
        resolve: async (_root, { input }, ctx) => {
          const id = parseId(input.id);
          await moveErrorGroup(ctx.db, actor(ctx), { id, move, reason: input.reason ?? null, note: input.note ?? null });
          return readErrorGroupOrThrow(ctx.db, id);
        },
      }),
    ]),
  ),
);
