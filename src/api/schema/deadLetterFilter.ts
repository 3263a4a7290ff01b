import type { DeadLetterFilter, IntRange, TimeRange } from '../../domain/deadLetterFilter.ts';
import { builder } from './builder.ts';
import { DeadLetterStatusEnum, ErrorKindEnum } from './enums.ts';
import { badUserInput } from './errors.ts';
import { parseId } from './ids.ts';

const MAX_LIST = 1000;
const MAX_TEXT = 500;
const MIN_ERROR_TEXT = 3;
const MAX_JSON = 10_000;
const MAX_PATH = 20;

export const TimeRangeInput = builder.inputType('TimeRange', {
  description: 'Half-open range [from, to). Either end may be left out; from after to is BAD_USER_INPUT.',
  fields: (t) => ({
    from: t.field({ type: 'DateTime' }),
    to: t.field({ type: 'DateTime' }),
  }),
});

export const IntRangeInput = builder.inputType('IntRange', {
  description: 'Inclusive range [min, max]. Either end may be left out; min above max is BAD_USER_INPUT.',
  fields: (t) => ({ min: t.int(), max: t.int() }),
});

export const PayloadPathInput = builder.inputType('PayloadPathFilter', {
  description: 'The payload value at `path` equals `equals` (jsonb equality, so key order does not matter).',
  fields: (t) => ({
    path: t.stringList({ required: true, description: `Object keys from the payload root, 1 to ${MAX_PATH} of them.` }),
    equals: t.string({ required: true, description: 'JSON text, e.g. `"c-42"` (with the quotes) or `42` or `{"a":1}`.' }),
  }),
});

export const DeadLetterFilterInput = builder.inputType('DeadLetterFilter', {
  description: 'Selects dead letters. Every field is optional; the fields given must all match (AND). Lists match any of their values.',
  fields: (t) => ({
    ids: t.idList({ description: `At most ${MAX_LIST} ids.` }),
    statuses: t.field({ type: [DeadLetterStatusEnum] }),
    eventTypes: t.stringList(),
    queues: t.stringList(),
    sources: t.stringList(),
    orderingKey: t.string({ description: 'Exact ordering key.' }),
    errorKinds: t.field({ type: [ErrorKindEnum] }),
    errorText: t.string({
      description: `Case-insensitive substring of the error message or stack, ${MIN_ERROR_TEXT} to ${MAX_TEXT} characters, matched literally (% and _ are not wildcards). Served by trigram indexes.`,
    }),
    payloadContains: t.string({
      description: 'JSON text the payload must contain (jsonb `@>`), e.g. `{"customer":{"tier":"gold"}}`. Served by the payload GIN index.',
    }),
    payloadPath: t.field({ type: PayloadPathInput }),
    createdAt: t.field({ type: TimeRangeInput }),
    updatedAt: t.field({ type: TimeRangeInput }),
    nextAttemptAt: t.field({ type: TimeRangeInput, description: 'Rows without a next attempt match only a range with neither from nor to.' }),
    attempts: t.field({ type: IntRangeInput }),
    errorSignatures: t.stringList({ description: 'Exact error signatures, as listed by `deadLetterStats.topErrors`.' }),
    groupId: t.id({
      description: 'Members of this error group (see `errorGroups`): its event type and error kind, and its signature as fingerprint or, without one, as error signature and top stack frames. An unknown id matches nothing.',
    }),
  }),
});

type FilterInput = typeof DeadLetterFilterInput.$inferInput;

/** Validates a filter argument; bad values are BAD_USER_INPUT naming the field. */
export function parseDeadLetterFilter(input: FilterInput | null | undefined): DeadLetterFilter {
  if (!input) return {};
  const filter: DeadLetterFilter = {};
  if (input.ids) filter.ids = capped('ids', input.ids).map((id) => parseId(id, 'filter.ids'));
  if (input.statuses) filter.statuses = capped('statuses', input.statuses);
  if (input.eventTypes) filter.eventTypes = capped('eventTypes', input.eventTypes);
  if (input.queues) filter.queues = capped('queues', input.queues);
  if (input.sources) filter.sources = capped('sources', input.sources);
  if (input.orderingKey != null) filter.orderingKey = text('orderingKey', input.orderingKey, 0);
  if (input.errorKinds) filter.errorKinds = capped('errorKinds', input.errorKinds);
  if (input.errorText != null) filter.errorText = text('errorText', input.errorText, MIN_ERROR_TEXT);
  if (input.payloadContains != null) filter.payloadContains = json('payloadContains', input.payloadContains);
  if (input.payloadPath) {
    const { path } = input.payloadPath;
    if (path.length < 1 || path.length > MAX_PATH) {
      throw badUserInput(`filter.payloadPath.path takes 1 to ${MAX_PATH} keys`, { argument: 'filter.payloadPath.path' });
    }
    filter.payloadPath = { path: [...path], equals: json('payloadPath.equals', input.payloadPath.equals) };
  }
  if (input.createdAt) filter.createdAt = timeRange('createdAt', input.createdAt);
  if (input.updatedAt) filter.updatedAt = timeRange('updatedAt', input.updatedAt);
  if (input.nextAttemptAt) filter.nextAttemptAt = timeRange('nextAttemptAt', input.nextAttemptAt);
  if (input.attempts) filter.attempts = intRange('attempts', input.attempts);
  if (input.errorSignatures) filter.errorSignatures = capped('errorSignatures', input.errorSignatures);
  if (input.groupId != null) filter.groupId = parseId(input.groupId, 'filter.groupId');
  return filter;
}

function capped<T>(field: string, values: readonly T[]): T[] {
  if (values.length > MAX_LIST) throw badUserInput(`filter.${field} takes at most ${MAX_LIST} values`, { argument: `filter.${field}` });
  return [...values];
}

function text(field: string, value: string, min: number): string {
  if (value.length < min || value.length > MAX_TEXT) {
    throw badUserInput(`filter.${field} must be ${min} to ${MAX_TEXT} characters`, { argument: `filter.${field}` });
  }
  return value;
}

function json(field: string, value: string): unknown {
  if (value.length > MAX_JSON) throw badUserInput(`filter.${field} is longer than ${MAX_JSON} characters`, { argument: `filter.${field}` });
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw badUserInput(`filter.${field} is not valid JSON`, { argument: `filter.${field}` });
  }
}

function timeRange(field: string, range: { from?: Date | null; to?: Date | null }): TimeRange {
  const parsed: TimeRange = {};
  if (range.from) parsed.from = range.from;
  if (range.to) parsed.to = range.to;
  if (parsed.from && parsed.to && parsed.from.getTime() > parsed.to.getTime()) {
    throw badUserInput(`filter.${field}.from is after filter.${field}.to`, { argument: `filter.${field}` });
  }
  return parsed;
}

function intRange(field: string, range: { min?: number | null; max?: number | null }): IntRange {
  const parsed: IntRange = {};
  if (range.min != null) parsed.min = range.min;
  if (range.max != null) parsed.max = range.max;
  if (parsed.min !== undefined && parsed.max !== undefined && parsed.min > parsed.max) {
    throw badUserInput(`filter.${field}.min is above filter.${field}.max`, { argument: `filter.${field}` });
  }
  return parsed;
}
