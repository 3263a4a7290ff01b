// Subscription errorGroupChanged: new groups, status moves, regressions and count changes, read by
// the one change feed (live/changeFeed.ts) and resumable by cursor like deadLetterChanged.
import { decodeCursor, encodeCursor } from '../../live/changeCursor.ts';
import type { ErrorGroupChangeEvent } from '../../live/liveEvents.ts';
import { errorGroupChanges } from '../../live/subscriberStreams.ts';
import { builder } from './builder.ts';
import { ErrorGroupFilterInput, ErrorGroupRef, ErrorGroupStatusEnum, parseGroupFilter } from './errorGroup.ts';
import { badUserInput } from './errors.ts';
import { liveFeed } from './subscriptions.ts';

const ErrorGroupChangeKindEnum = builder.enumType('ErrorGroupChangeKind', {
  description: 'CREATED: the group’s first event was folded in. STATUS_CHANGED: moved by an operator or by the database. REGRESSED: a new failure reopened a RESOLVED group. COUNTS_CHANGED: its counts moved (changes between two reads of the feed coalesce into the latest counts).',
  values: ['CREATED', 'STATUS_CHANGED', 'REGRESSED', 'COUNTS_CHANGED'] as const,
});

const ErrorGroupChangeRef = builder.objectRef<ErrorGroupChangeEvent>('ErrorGroupChange').implement({
  fields: (t) => ({
    cursor: t.string({ description: 'Pass as `after` to resume right after this change.', resolve: (e) => encodeCursor(e.cursor) }),
    kind: t.field({ type: ErrorGroupChangeKindEnum, resolve: (e) => e.kind }),
    group: t.field({ type: ErrorGroupRef, description: 'The group as it was read after the change.', resolve: (e) => e.group }),
    fromStatus: t.field({ type: ErrorGroupStatusEnum, nullable: true, description: 'For STATUS_CHANGED and REGRESSED: the status it left.', resolve: (e) => e.fromStatus }),
    reason: t.string({ nullable: true, description: 'For status moves: the reason recorded in its history.', resolve: (e) => e.reason }),
  }),
});

builder.subscriptionFields((t) => ({
  errorGroupChanged: t.field({
    type: ErrorGroupChangeRef,
    description: 'Changes of error groups matching the filter, in commit order: CREATED, STATUS_CHANGED and REGRESSED for every move, COUNTS_CHANGED when counts moved without one. Groups trail their events by the fold delay (well under a second). With `after` (a cursor from an earlier change), first replays everything since that change, then continues live, without gaps or duplicates.',
    args: { filter: t.arg({ type: ErrorGroupFilterInput }), after: t.arg.string() },
    subscribe: (_root, args, ctx) => {
      const after = args.after == null ? undefined : decodeCursor(args.after);
      if (after === null) throw badUserInput('after is not a change cursor issued by this service', { argument: 'after' });
      return errorGroupChanges(liveFeed(ctx), parseGroupFilter(args.filter), after);
    },
    resolve: (event) => event,
  }),
}));
