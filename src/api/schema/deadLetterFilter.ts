import {
  DEAD_LETTER_FILTER_FIELDS, MAX_JSON, MAX_LIST, MAX_PATH, MAX_TEXT, MIN_ERROR_TEXT, type DeadLetterFilter, type FilterOperator, type IntRange, type TimeRange,
} from '../../domain/deadLetterFilter.ts';
import { parseJsonKeepingNumbers } from '../../reads/exactJson.ts';
import { firstUnstorable } from '../useTextInputGuard.ts';
import { builder } from './builder.ts';
import { DeadLetterStatusEnum, ErrorKindEnum } from './enums.ts';
import { badUserInput } from './errors.ts';
import { parseId } from './ids.ts';

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

const ENUM_INPUTS = { DeadLetterStatus: DeadLetterStatusEnum, ErrorKind: ErrorKindEnum };

type FieldBuilder = Parameters<Parameters<typeof builder.inputType>[1]['fields']>[0];

/** The GraphQL input field an operator takes. */
function inputField(t: FieldBuilder, op: FilterOperator, description: string | undefined) {
  const options = description === undefined ? {} : { description };
  switch (op.kind) {
    case 'inList': return op.type === 'bigint' ? t.idList(options) : t.stringList(options);
    case 'inEnum': return t.field({ type: [ENUM_INPUTS[op.enum]], ...options });
    case 'equals': return op.type === 'bigint' ? t.id(options) : t.string(options);
    case 'textSearch': case 'jsonContains': return t.string(options);
    case 'jsonPathEquals': return t.field({ type: PayloadPathInput, ...options });
    case 'timeRange': return t.field({ type: TimeRangeInput, ...options });
    case 'intRange': return t.field({ type: IntRangeInput, ...options });
  }
}

export const DeadLetterFilterInput = builder.inputType('DeadLetterFilter', {
  description: 'Selects dead letters. Every field is optional; the fields given must all match (AND). Lists match any of their values.',
  fields: (t) => Object.fromEntries(
    Object.entries(DEAD_LETTER_FILTER_FIELDS).map(([name, field]: [string, { op: FilterOperator; description?: string }]) => [name, inputField(t, field.op, field.description)]),
  ),
});

/** A filter argument as GraphQL has already checked its shape: each field by its operator's input type. */
export type DeadLetterFilterArg = { [name: string]: unknown };

/** Validates a filter argument; bad values are BAD_USER_INPUT naming the field. */
export function parseDeadLetterFilter(input: DeadLetterFilterArg | null | undefined): DeadLetterFilter {
  if (!input) return {};
  const filter: Record<string, unknown> = {};
  for (const [name, { op }] of Object.entries(DEAD_LETTER_FILTER_FIELDS) as [string, { op: FilterOperator }][]) {
    const raw = input[name];
    if (raw != null) filter[name] = parseValue(name, op, raw);
  }
  return filter as DeadLetterFilter;
}

/** One field's value, validated by its operator. */
function parseValue(name: string, op: FilterOperator, raw: unknown): unknown {
  switch (op.kind) {
    case 'inList': {
      const values = capped(name, raw as string[]);
      return op.type === 'bigint' ? values.map((id) => parseId(id, `filter.${name}`)) : values;
    }
    case 'inEnum': return capped(name, raw as string[]);
    case 'equals': return op.type === 'bigint' ? parseId(raw as string, `filter.${name}`) : text(name, raw as string, 0);
    case 'textSearch': return text(name, raw as string, MIN_ERROR_TEXT);
    case 'jsonContains': return json(name, raw as string);
    case 'jsonPathEquals': {
      const { path, equals } = raw as { path: string[]; equals: string };
      if (path.length < 1 || path.length > MAX_PATH) {
        throw badUserInput(`filter.${name}.path takes 1 to ${MAX_PATH} keys`, { argument: `filter.${name}.path` });
      }
      return { path: [...path], equals: json(`${name}.equals`, equals) };
    }
    case 'timeRange': return timeRange(name, raw as { from?: Date | null; to?: Date | null });
    case 'intRange': return intRange(name, raw as { min?: number | null; max?: number | null });
  }
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
  const argument = `filter.${field}`;
  if (value.length > MAX_JSON) throw badUserInput(`${argument} is longer than ${MAX_JSON} characters`, { argument });
  let parsed: unknown;
  try {
    parsed = parseJsonKeepingNumbers(value);
  } catch {
    throw badUserInput(`${argument} is not valid JSON`, { argument });
  }
  // The text guard saw only the escapes (\u0000, a lone \ud800): parsed, they are text jsonb refuses.
  const where = firstUnstorable({ [argument]: parsed }, '');
  if (where !== undefined) {
    throw badUserInput(`${where} holds a \\u0000 or unpaired surrogate escape, which PostgreSQL jsonb cannot store`, { argument });
  }
  return parsed;
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
