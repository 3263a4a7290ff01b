// The fields of DeadLetterFilter, one declaration each: the column it reads and how (its operator),
// the table that holds the column, and its GraphQL description. Everything else follows from the
// operator, written once per operator kind: the GraphQL input type and its validation
// (api/schema/deadLetterFilter.ts), the SQL (db/sql/deadLetterWhere.ts), the in-memory match for
// subscriptions (domain/deadLetterFilter.ts) and the DeadLetterFilter type below. A new field is a
// line here. The table holds no SQL; it sits on db's floor because db's own statements
// (rollupPlan, errorTextPage) build the filter's SQL, and db cannot import domain.
import type { DeadLetter } from '../generated/prisma/client.ts';

export const MAX_LIST = 1000;
export const MAX_TEXT = 500;
export const MIN_ERROR_TEXT = 3;
export const MAX_JSON = 10_000;
export const MAX_PATH = 20;

/** A column of dead_letters_current, by its Prisma name. */
export type FilterColumn = Exclude<keyof DeadLetter, 'changeXid'>;
/** How a list or exact value is bound: text, or bigint (taken as an ID in GraphQL). */
export type ValueType = 'text' | 'bigint';
/** Our own enums, whose values are written as literals (see deadLetterWhere.ts). */
export type FilterEnum = 'DeadLetterStatus' | 'ErrorKind';

/** How a field compares its value with a row. */
export type FilterOperator =
  | { kind: 'inList'; column: FilterColumn; type: ValueType }
  | { kind: 'inEnum'; column: FilterColumn; enum: FilterEnum }
  | { kind: 'equals'; column: FilterColumn; type: ValueType }
  | { kind: 'textSearch'; columns: readonly ['errorMessage', 'errorStack'] }
  | { kind: 'jsonContains'; column: 'payload' }
  | { kind: 'jsonPathEquals'; column: 'payload' }
  | { kind: 'timeRange'; column: FilterColumn }
  | { kind: 'intRange'; column: FilterColumn };

/** The column is one of the values (a list field; an empty list matches nothing). */
export const inList = <C extends FilterColumn>(column: C, type: ValueType = 'text') => ({ kind: 'inList', column, type }) as const;
/** The column is one of our enum's values. */
export const inEnum = <C extends FilterColumn>(column: C, name: FilterEnum) => ({ kind: 'inEnum', column, enum: name }) as const;
/** The column equals the value (a null column matches nothing). */
export const equalTo = <C extends FilterColumn>(column: C, type: ValueType = 'text') => ({ kind: 'equals', column, type }) as const;
/** Case-insensitive literal substring of the error message or stack (trigram indexes on both). */
export const textSearch = { kind: 'textSearch', columns: ['errorMessage', 'errorStack'] } as const;
/** jsonb containment (`payload @> value`). */
export const jsonContains = { kind: 'jsonContains', column: 'payload' } as const;
/** The payload value at `path` (object keys) equals `equals` (jsonb equality). */
export const jsonPathEquals = { kind: 'jsonPathEquals', column: 'payload' } as const;
/** Half-open [from, to) on a time column. */
export const timeRange = <C extends FilterColumn>(column: C) => ({ kind: 'timeRange', column }) as const;
/** Inclusive [min, max] on an integer column. */
export const intRange = <C extends FilterColumn>(column: C) => ({ kind: 'intRange', column }) as const;

/**
 * Where a field's column is read: `event` columns are dead_letters' own (written once), `state`
 * columns live on dead_letter_states, and `both` are written once on dead_letters and copied onto
 * the state row under the same name (id, event type, ordering key, created_at). dead_letters still
 * has status, attempts and next_attempt_at, as an event was recorded, so a state field over
 * dead_letters alone would be answered, wrongly: a new field must say which it is.
 */
export type FilterTable = 'event' | 'state' | 'both';

export interface FilterFieldDeclaration {
  op: FilterOperator;
  table: FilterTable;
  /** The GraphQL input field's description. */
  description?: string;
}

export const DEAD_LETTER_FILTER_FIELDS = {
  ids: { op: inList('id', 'bigint'), table: 'both', description: `At most ${MAX_LIST} ids.` },
  statuses: { op: inEnum('status', 'DeadLetterStatus'), table: 'state' },
  eventTypes: { op: inList('eventType'), table: 'both' },
  queues: { op: inList('queue'), table: 'event' },
  sources: { op: inList('source'), table: 'event' },
  orderingKey: { op: equalTo('orderingKey'), table: 'both', description: 'Exact ordering key.' },
  errorKinds: { op: inEnum('errorKind', 'ErrorKind'), table: 'event' },
  errorText: {
    op: textSearch,
    table: 'event',
    description: `Case-insensitive substring of the error message or stack, ${MIN_ERROR_TEXT} to ${MAX_TEXT} characters, matched literally (% and _ are not wildcards). Served by trigram indexes.`,
  },
  payloadContains: {
    op: jsonContains,
    table: 'event',
    description: 'JSON text the payload must contain (jsonb `@>`), e.g. `{"customer":{"tier":"gold"}}`. Served by the payload GIN index.',
  },
  payloadPath: { op: jsonPathEquals, table: 'event' },
  createdAt: { op: timeRange('createdAt'), table: 'both' },
  updatedAt: { op: timeRange('updatedAt'), table: 'state' },
  nextAttemptAt: { op: timeRange('nextAttemptAt'), table: 'state', description: 'Rows without a next attempt match only a range with neither from nor to.' },
  attempts: { op: intRange('attempts'), table: 'state' },
  errorSignatures: {
    op: inList('errorSignature'),
    table: 'event',
    description: 'Exact error signatures, as listed by `deadLetterStats.topErrors`.',
  },
  dedupeKeys: {
    op: inList('dedupeKey'),
    table: 'event',
    description: 'Dedupe keys the producers recorded (`recordDeadLetter(input: { dedupeKey })`), each naming at most one dead letter. Served by its unique index.',
  },
  groupId: {
    op: equalTo('errorGroupId', 'bigint'),
    table: 'event',
    description: 'Members of this error group (see `errorGroups`): its event type and error kind, and its signature as fingerprint or, without one, as error signature and top stack frames. An unknown id matches nothing.',
  },
} as const satisfies Record<string, FilterFieldDeclaration>;

export type FilterField = keyof typeof DEAD_LETTER_FILTER_FIELDS;

/** Half-open time range [from, to); either end may be open. */
export interface TimeRange {
  from?: Date;
  to?: Date;
}

/** Inclusive integer range; either end may be open. */
export interface IntRange {
  min?: number;
  max?: number;
}

/** The value an operator takes. */
export type OperatorValue<O extends FilterOperator> =
  O extends { kind: 'inList' | 'inEnum'; column: infer C extends FilterColumn } ? NonNullable<DeadLetter[C]>[]
  : O extends { kind: 'equals'; column: infer C extends FilterColumn } ? NonNullable<DeadLetter[C]>
  : O extends { kind: 'textSearch' } ? string
  : O extends { kind: 'jsonContains' } ? unknown
  : O extends { kind: 'jsonPathEquals' } ? { path: string[]; equals: unknown }
  : O extends { kind: 'timeRange' } ? TimeRange
  : O extends { kind: 'intRange' } ? IntRange
  : never;

/** The one filter shared by queries, stats, bulk mutations and subscriptions. Given fields combine with AND. */
export type DeadLetterFilter = { [F in FilterField]?: OperatorValue<(typeof DEAD_LETTER_FILTER_FIELDS)[F]['op']> };

type ColumnsOf<O> = O extends { columns: readonly (infer C)[] } ? C : O extends { column: infer C } ? C : never;
/** The columns of a dead letter the filter reads. */
export type FilterReadColumn = ColumnsOf<(typeof DEAD_LETTER_FILTER_FIELDS)[FilterField]['op']>;

/** The columns an operator reads. */
export function columnsOf(op: FilterOperator): readonly FilterColumn[] {
  return 'columns' in op ? op.columns : [op.column];
}

/** The declared fields, in declaration order, with their names. */
export const filterFields = (): [FilterField, FilterFieldDeclaration][] =>
  Object.entries(DEAD_LETTER_FILTER_FIELDS) as [FilterField, FilterFieldDeclaration][];
