// Subscription errorGroupChanged: new groups, status moves and regressions at once, count changes
// at most once a second per group, from the process's one shared reader (live/errorGroupChanges.ts).
import { COALESCE_MS, type ErrorGroupChangeEvent } from '../../live/errorGroupChanges.ts';
import { createGraphQLError } from 'graphql-yoga';
import { builder } from './builder.ts';
import { ErrorGroupFilterInput, ErrorGroupRef, ErrorGroupStatusEnum, parseGroupFilter } from './errorGroup.ts';

const ErrorGroupChangeKindEnum = builder.enumType('ErrorGroupChangeKind', {
  description: 'CREATED: the group’s first event was folded in. STATUS_CHANGED: moved by an operator or by the database. REGRESSED: a new failure reopened a RESOLVED group. COUNTS_CHANGED: its counts moved (at most one per second per group; the latest counts always arrive).',
  values: ['CREATED', 'STATUS_CHANGED', 'REGRESSED', 'COUNTS_CHANGED'] as const,
});

const ErrorGroupChangeRef = builder.objectRef<ErrorGroupChangeEvent>('ErrorGroupChange').implement({
  fields: (t) => ({
    kind: t.field({ type: ErrorGroupChangeKindEnum, resolve: (e) => e.kind }),
    group: t.field({ type: ErrorGroupRef, description: 'The group as it was read after the change.', resolve: (e) => e.group }),
    fromStatus: t.field({ type: ErrorGroupStatusEnum, nullable: true, description: 'For STATUS_CHANGED and REGRESSED: the status it left.', resolve: (e) => e.fromStatus }),
    reason: t.string({ nullable: true, description: 'For status moves: the reason recorded in its history.', resolve: (e) => e.reason }),
  }),
});

builder.subscriptionFields((t) => ({
  errorGroupChanged: t.field({
    type: ErrorGroupChangeRef,
    description: `Changes of error groups matching the filter: CREATED, STATUS_CHANGED and REGRESSED as they happen, COUNTS_CHANGED at most once per ${COALESCE_MS} ms per group. Groups trail their events by the fold delay (well under a second); changes are read when the database signals them (NOTIFY), or twice a second where it cannot.`,
    args: { filter: t.arg({ type: ErrorGroupFilterInput }) },
    subscribe: (_root, args, ctx) => {
      if (!ctx.errorGroupChanges) throw createGraphQLError('errorGroupChanged is not served in this process', { extensions: { code: 'SERVICE_UNAVAILABLE' } });
      return ctx.errorGroupChanges.watch(parseGroupFilter(args.filter));
    },
    resolve: (event) => event,
  }),
}));
