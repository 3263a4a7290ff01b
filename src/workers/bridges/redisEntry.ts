// A Redis stream entry as the dead letter to store (pure: no connection). An entry is a list of
// field/value pairs of bytes (read as Buffers, so nothing is decoded lossily):
// - the payload is the value of the payload field (default `payload`): JSON stays JSON, other UTF-8
//   text is { "$text" }, anything else { "$binary": base64 }, byte-exact. An entry without that field
//   (or a bridge with `payloadField: null`) is stored whole, as an object of its fields.
// - headers are the other fields: UTF-8 values as text, others as { "$binary" }; a name that is not
//   UTF-8 is `$binary:<base64>`; a name given twice keeps its values in an array, in order.
// - event type, error message and kind, queue and source come from named fields, else defaults.
// - the dedupe key is `redis:<stream>:<group>:<entry id>`: a redelivery of the entry (a crash between
//   the commit and the XACK, a claim from a dead consumer) is stored once.
import { createHash } from 'node:crypto';
import { ErrorKind } from '../../generated/prisma/enums.ts';
import { MAX_ERROR_TEXT, MAX_PAYLOAD_BYTES, type RecordDeadLetterInput } from '../../domain/recordInput.ts';
import { parseJsonKeepingNumbers } from '../../db/exactJson.ts';
import type { BridgeMessage } from './bridgeKind.ts';

export const DEFAULT_REDIS_EVENT_TYPE = 'redis.entry';
const MAX_DEDUPE_PLACE = 400;
const YEAR_2000_MS = Date.UTC(2000, 0, 1);
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const ERROR_KINDS = new Set<string>(Object.values(ErrorKind));

/** Which fields of an entry carry what (a null or absent field falls back to its default). */
export interface EntryMapping {
  bridge: string;
  stream: string;
  group: string;
  payloadField: string | null;
  eventType: string | undefined;
  eventTypeField: string;
  errorField: string;
  errorKindField: string;
  queueField: string;
  sourceField: string;
  sourceStreamField: string;
}

type Decoded = Pick<BridgeMessage, 'record' | 'asBytes' | 'poison' | 'refusal'>;

/** The entry `id` with its flat [name, value, name, value…] fields as the dead letter to store. */
export function decodeEntry(id: string, fields: readonly Buffer[], m: EntryMapping): Decoded {
  const pairs: [string, Buffer][] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) pairs.push([nameOf(fields[i]!), fields[i + 1]!]);
  const first = (name: string) => pairs.find(([n]) => n === name)?.[1];
  const textOf = (name: string, max: number) => {
    const value = first(name);
    const text = value === undefined ? null : textOrNull(value);
    return text === null || text === '' ? null : text.slice(0, max);
  };
  const body = m.payloadField === null ? undefined : first(m.payloadField);
  const headerPairs = body === undefined ? [] : pairs.filter(([n]) => n !== m.payloadField);
  const errorKind = textOf(m.errorKindField, 40)?.toUpperCase();
  const place = `${m.stream}:${m.group}`;
  const sourceStream = textOf(m.sourceStreamField, 1024);
  const base: Omit<RecordDeadLetterInput, 'payload'> = {
    eventType: m.eventType ?? textOf(m.eventTypeField, 200) ?? DEFAULT_REDIS_EVENT_TYPE,
    errorKind: errorKind && ERROR_KINDS.has(errorKind) ? (errorKind as ErrorKind) : 'UNKNOWN',
    errorMessage: textOf(m.errorField, MAX_ERROR_TEXT) ?? `read from stream ${m.stream.slice(0, 200)}`,
    queue: textOf(m.queueField, 200) ?? m.stream.slice(0, 200),
    source: textOf(m.sourceField, 200) ?? 'redis',
    headers: objectOf(headerPairs),
    occurredAt: timeOfId(id),
    dedupeKey: `redis:${place.length > MAX_DEDUPE_PLACE ? createHash('sha256').update(place).digest('hex') : place}:${id}`,
    origin: { kind: 'redis', bridge: m.bridge, stream: m.stream, id, ...(sourceStream && { sourceStream }) },
  };
  if (body === undefined) {
    const size = pairs.reduce((sum, [n, v]) => sum + Buffer.byteLength(n) + v.length, 0);
    if (size > MAX_PAYLOAD_BYTES) return tooLarge(base, size);
    return { record: { ...base, payload: objectOf(pairs) }, asBytes: null, poison: null, refusal: null };
  }
  if (body.length > MAX_PAYLOAD_BYTES) return tooLarge(base, body.length);
  const bytes = (): RecordDeadLetterInput => ({ ...base, payload: { $binary: body.toString('base64') } });
  const text = textOrNull(body);
  if (text === null) return { record: bytes(), asBytes: null, poison: null, refusal: null };
  try {
    return { record: { ...base, payload: parseJsonKeepingNumbers(text) }, asBytes: bytes, poison: null, refusal: null };
  } catch {
    return { record: { ...base, payload: { $text: text } }, asBytes: bytes, poison: null, refusal: null };
  }
}

function tooLarge(base: Omit<RecordDeadLetterInput, 'payload'>, size: number): Decoded {
  return { record: { ...base, payload: null }, asBytes: null, poison: null, refusal: { reason: 'too_large', message: `entry ${String(base.origin?.id)}: body of ${size} bytes is over the ${MAX_PAYLOAD_BYTES}-byte payload cap` } };
}

/** UTF-8 text without NUL (what jsonb can hold), else null. */
function textOrNull(value: Buffer): string | null {
  try {
    const text = UTF8.decode(value);
    return text.includes('\u0000') ? null : text;
  } catch {
    return null;
  }
}

function nameOf(name: Buffer): string {
  return textOrNull(name) ?? `$binary:${name.toString('base64')}`;
}

function valueOf(value: Buffer): string | { $binary: string } {
  return textOrNull(value) ?? { $binary: value.toString('base64') };
}

function objectOf(pairs: readonly [string, Buffer][]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, raw] of pairs) {
    const value = valueOf(raw);
    // A value is never an array, so an array is a name given more than once.
    const had = Object.hasOwn(out, name) ? out[name] : undefined;
    if (had === undefined) out[name] = value;
    else if (Array.isArray(had)) had.push(value);
    else out[name] = [had, value];
  }
  return out;
}

/** An entry id's first part is the milliseconds when it was added, unless the producer chose small ids. */
export function timeOfId(id: string): Date | null {
  const ms = Number(id.split('-')[0]);
  return Number.isSafeInteger(ms) && ms >= YEAR_2000_MS && ms < 8.64e15 ? new Date(ms) : null;
}
