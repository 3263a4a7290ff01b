// Pure validation of producer input. Everything the database would reject (CHECKs, NUL bytes)
// is caught here first, so a bad batch is refused whole, with the offending index, before any write.
import type { ErrorKind } from '../generated/prisma/enums.ts';
import type { ValidRecord } from '../db/sql/insertDeadLetters.ts';
import { ValidationError } from './errors.ts';
import { isKeptNumber } from '../db/exactJson.ts';

/** A validated row, with the payload and headers already serialised once (its shape is the insert's). */
export type { ValidRecord };

export const MAX_PAYLOAD_BYTES = 256 * 1024;
/** Deepest nesting of payloads and headers; the table's depth CHECKs say the same (migration 20261124100000). */
export const MAX_JSON_DEPTH = 100;
export const MAX_HEADERS_BYTES = 64 * 1024;
/** Source coordinates' cap; the table's origin CHECK says the same (migration 20261205100000_bridges). */
export const MAX_ORIGIN_BYTES = 8 * 1024;
const ORIGIN_KIND = /^[a-z][a-z0-9_]{0,39}$/;
export const MAX_BATCH = 1000;
export const MAX_ERROR_TEXT = 64 * 1024;
const MAX_INT64 = 9223372036854775807n;

export interface RecordDeadLetterInput {
  eventType: string;
  payload: unknown;
  errorKind?: ErrorKind | null;
  errorMessage?: string | null;
  errorStack?: string | null;
  queue?: string | null;
  source?: string | null;
  orderingKey?: string | null;
  orderingSeq?: bigint | null;
  headers?: unknown;
  /** Where a broker bridge took the event from: `{ kind: "amqp", … }` (docs/brokers.md), so it can go back there. */
  origin?: { kind: string; [key: string]: unknown } | null;
  occurredAt?: Date | null;
  dedupeKey?: string | null;
  maxAttempts?: number | null;
  nextAttemptAt?: Date | null;
}

export interface RecordRules {
  /** When non-empty, only these event types are accepted. */
  allowedEventTypes: readonly string[];
}

/**
 * Validates one producer input; throws ValidationError naming the field (and `index` in a batch).
 */
export function validateRecordInput(input: RecordDeadLetterInput, rules: RecordRules, index: number | null = null): ValidRecord {
  const fail = (field: string, message: string) => new ValidationError(field, message, index);
  const text = (field: string, value: string | null | undefined, max: number): string | null => {
    if (value === null || value === undefined) return null;
    if (value.length < 1 || value.length > max) throw fail(field, `must be 1 to ${max} characters`);
    if (value.includes('\u0000')) throw fail(field, 'must not contain NUL characters');
    return value;
  };
  const eventType = text('eventType', input.eventType ?? '', 200);
  if (!eventType) throw fail('eventType', 'must not be empty');
  if (rules.allowedEventTypes.length && !rules.allowedEventTypes.includes(eventType)) {
    throw fail('eventType', `unknown event type ${JSON.stringify(eventType.slice(0, 60))}`);
  }
  const payloadJson = toJson('payload', input.payload, MAX_PAYLOAD_BYTES, fail);
  let headersJson: string | null = null;
  if (input.headers !== null && input.headers !== undefined) {
    if (typeof input.headers !== 'object' || Array.isArray(input.headers)) throw fail('headers', 'must be a JSON object');
    headersJson = toJson('headers', input.headers, MAX_HEADERS_BYTES, fail);
  }
  let originJson: string | null = null;
  if (input.origin !== null && input.origin !== undefined) {
    const origin: unknown = input.origin;
    if (typeof origin !== 'object' || origin === null || Array.isArray(origin)) throw fail('origin', 'must be a JSON object');
    const kind = (origin as { kind?: unknown }).kind;
    if (typeof kind !== 'string' || !ORIGIN_KIND.test(kind)) throw fail('origin.kind', 'must be a lower-case name: a letter, then letters, digits or _ (at most 40)');
    originJson = toJson('origin', origin, MAX_ORIGIN_BYTES, fail);
  }
  if (input.maxAttempts !== null && input.maxAttempts !== undefined &&
      (!Number.isInteger(input.maxAttempts) || input.maxAttempts < 1 || input.maxAttempts > 1000)) {
    throw fail('maxAttempts', 'must be an integer from 1 to 1000');
  }
  if (input.orderingSeq !== null && input.orderingSeq !== undefined && (input.orderingSeq < 0n || input.orderingSeq > MAX_INT64)) {
    throw fail('orderingSeq', 'must be a non-negative 64-bit integer');
  }
  return {
    eventType,
    payloadJson,
    headersJson,
    originJson,
    errorKind: input.errorKind ?? null,
    errorMessage: input.errorMessage === '' ? '' : text('error.message', input.errorMessage, MAX_ERROR_TEXT),
    errorStack: text('error.stack', input.errorStack, MAX_ERROR_TEXT),
    queue: text('queue', input.queue, 200),
    source: text('source', input.source, 200),
    orderingKey: text('orderingKey', input.orderingKey, 500),
    orderingSeq: input.orderingSeq?.toString() ?? null,
    occurredAt: validDate('occurredAt', input.occurredAt, fail),
    dedupeKey: text('dedupeKey', input.dedupeKey, 500),
    maxAttempts: input.maxAttempts ?? null,
    nextAttemptAt: validDate('nextAttemptAt', input.nextAttemptAt, fail),
  };
}

function toJson(field: string, value: unknown, maxBytes: number, fail: (f: string, m: string) => ValidationError): string {
  const tooDeep = () => fail(field, `must be nested at most ${MAX_JSON_DEPTH} levels deep`);
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    // JSON.stringify recurses: a document thousands of levels deep overflows the stack.
    throw error instanceof RangeError ? tooDeep() : fail(field, 'must be JSON');
  }
  if (json === undefined) throw fail(field, 'must be JSON');
  if (isDeeperThan(value, MAX_JSON_DEPTH)) throw tooDeep();
  // jsonb rejects \u0000 in strings (SQLSTATE 22P05); refuse it here instead of failing the batch in SQL.
  if (json.includes('\\u0000')) throw fail(field, 'must not contain \\u0000');
  // The database CHECK measures jsonb's text form, which adds a space after ':' and ','; a payload
  // just under the cap here can still trip it there, and src/db/errors.ts maps that to this error.
  // A UTF-16 code unit is at most 3 bytes of UTF-8, so most documents need no byte count.
  if (json.length * 3 > maxBytes && Buffer.byteLength(json) > maxBytes) throw fail(field, `must be at most ${maxBytes} bytes of JSON`);
  return json;
}

/** True when some value sits below `maxDepth` levels of objects and arrays (the document is level 0). */
export function isDeeperThan(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (depth > maxDepth) return true;
    if (item !== null && typeof item === 'object' && !isKeptNumber(item)) {
      for (const child of Object.values(item)) stack.push([child, depth + 1]);
    }
  }
  return false;
}

function validDate(field: string, value: Date | null | undefined, fail: (f: string, m: string) => ValidationError): string | null {
  if (value === null || value === undefined) return null;
  if (Number.isNaN(value.getTime())) throw fail(field, 'must be a valid date-time');
  return value.toISOString();
}
