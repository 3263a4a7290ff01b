// What the NATS bridge stores, from what JetStream holds (pure: no connection). Two shapes:
// - a message of a dead-letter stream, as it is;
// - a consumer advisory (MAX_DELIVERIES or MSG_TERMINATED) with the original message it names,
//   fetched by its stream sequence, or without it when the stream no longer has it.
// The body becomes the payload by messageBody.ts's rules, the RabbitMQ kind's too (Content-Type and
// Content-Encoding from the message's headers). NATS headers are kept as { name: value } (an array
// when a name repeats).
import type { MsgHdrs } from '@nats-io/transport-node';
import { MAX_HEADERS_BYTES, MAX_PAYLOAD_BYTES, type RecordDeadLetterInput } from '../../domain/recordInput.ts';
import { decodeBody, type DecodedMessage } from './messageBody.ts';

const DEFAULT_EVENT_TYPE = 'nats.message';
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const ADVISORY_TYPES = {
  'io.nats.jetstream.advisory.v1.max_deliver': 'MAX_DELIVERIES',
  'io.nats.jetstream.advisory.v1.terminated': 'MSG_TERMINATED',
} as const;

/** A message as JetStream stores it: a consumed one, or one fetched by its sequence. */
export interface StoredNatsMessage {
  stream: string;
  subject: string;
  seq: number;
  data: Uint8Array;
  headers: MsgHdrs | undefined;
  /** When the stream stored it. */
  storedAt: Date;
}

/** A consumer advisory the bridge acts on (nats-server's JSConsumerDeliveryExceeded/TerminatedAdvisory). */
export interface ConsumerAdvisory {
  kind: 'MAX_DELIVERIES' | 'MSG_TERMINATED';
  /** The advisory's own unique id (a NUID), stable across redeliveries of it. */
  id: string;
  timestamp: Date | null;
  stream: string;
  consumer: string;
  streamSeq: number;
  deliveries: number | null;
  /** Why the consumer terminated the message (`+TERM reason`; nats-server 2.11 and later). */
  reason: string | null;
  /** The advisory as published, kept in the dead letter's headers. */
  raw: Record<string, unknown>;
}

export type Decoded = DecodedMessage;

export interface RecordContext {
  bridge: string;
  /** A fixed event type; default the message's subject. */
  eventType: string | undefined;
}

/** Reads an advisory's JSON; null when the bytes are not one of the two advisories the bridge acts on. */
export function parseAdvisory(data: Uint8Array): ConsumerAdvisory | null {
  let raw: unknown;
  try {
    raw = JSON.parse(UTF8.decode(data));
  } catch {
    return null;
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const a = raw as Record<string, unknown>;
  const kind = ADVISORY_TYPES[a.type as keyof typeof ADVISORY_TYPES];
  if (!kind || typeof a.stream !== 'string' || typeof a.consumer !== 'string' || typeof a.id !== 'string' ||
      !Number.isSafeInteger(a.stream_seq) || (a.stream_seq as number) < 1) return null;
  const timestamp = typeof a.timestamp === 'string' ? new Date(a.timestamp) : null;
  return {
    kind, id: a.id, stream: a.stream, consumer: a.consumer, streamSeq: a.stream_seq as number,
    timestamp: timestamp && !Number.isNaN(timestamp.getTime()) ? timestamp : null,
    deliveries: Number.isSafeInteger(a.deliveries) ? a.deliveries as number : null,
    reason: typeof a.reason === 'string' && a.reason !== '' ? a.reason : null,
    raw: a,
  };
}

/** A message of a dead-letter stream as the dead letter to store. */
export function deadLetterRecord(m: StoredNatsMessage, c: RecordContext): Decoded {
  const headers = headersOf(m.headers);
  const error = firstValue(headers, 'lazarus-error');
  const sourceSubject = firstValue(headers, 'lazarus-source-subject')?.slice(0, 255);
  const base: Omit<RecordDeadLetterInput, 'payload'> = {
    eventType: eventTypeOf(c, m.subject),
    errorKind: 'UNKNOWN',
    errorMessage: error ?? `published to dead-letter subject ${m.subject} (stream ${m.stream})`,
    queue: m.stream.slice(0, 200),
    source: 'nats',
    headers: { headers },
    occurredAt: m.storedAt,
    dedupeKey: keyOf(m.stream, m.seq, String(m.storedAt.getTime())),
    origin: {
      kind: 'nats', bridge: c.bridge, stream: m.stream, subject: m.subject, sequence: m.seq,
      // Where it was first published, as the producer that dead-lettered it names it: its source.
      ...(sourceSubject && { sourceSubject }),
    },
  };
  return withBody(base, m.data, headers);
}

/**
 * An advisory as the dead letter to store: the original message with the advisory's failure
 * context, or the advisory alone (and why) when `original` is null.
 */
export function advisoryRecord(a: ConsumerAdvisory, original: StoredNatsMessage | null, whyMissing: string, c: RecordContext): Decoded {
  const place = `${a.stream}/${a.consumer}`;
  const deliveries = a.deliveries === null ? '' : ` after ${a.deliveries} ${a.deliveries === 1 ? 'delivery' : 'deliveries'}`;
  const context = a.kind === 'MAX_DELIVERIES'
    ? `MAX_DELIVERIES: consumer ${place} gave up on stream sequence ${a.streamSeq}${deliveries}`
    : `MSG_TERMINATED: consumer ${place} terminated stream sequence ${a.streamSeq}${deliveries}${a.reason ? `: ${a.reason}` : ''}`;
  const headers = original ? headersOf(original.headers) : {};
  const base: Omit<RecordDeadLetterInput, 'payload'> = {
    eventType: eventTypeOf(c, original?.subject ?? null),
    errorKind: 'UNKNOWN',
    errorMessage: original ? context : `${context}; ${whyMissing}: only the advisory is recorded`,
    queue: place.slice(0, 200),
    source: 'nats',
    headers: { headers, advisory: a.raw },
    occurredAt: a.timestamp,
    // The advisory's id tells a new failure of the same sequence (a reset consumer, a recreated
    // stream) from a redelivery of the same advisory after a crash between commit and ack.
    dedupeKey: keyOf(a.stream, a.streamSeq, a.id),
    origin: { kind: 'nats', bridge: c.bridge, stream: a.stream, subject: original?.subject ?? null, sequence: a.streamSeq },
  };
  if (!original) return { record: { ...base, payload: null }, asBytes: null, poison: null, refusal: null };
  let decoded = withBody(base, original.data, headers);
  // Never refused: the advisory is the only trace of the failure. Stored without what does not fit.
  if (decoded.refusal?.reason === 'bad_headers') {
    const slim = { ...base, headers: { advisory: a.raw }, errorMessage: `${context}; its headers were left out (${decoded.refusal.message})` };
    decoded = withBody(slim, original.data, headers);
    if (!decoded.refusal) return { ...decoded, poison: 'bad_headers' };
  }
  if (decoded.refusal) {
    const kept = headersFit(base.headers) ? base.headers : { advisory: a.raw };
    const errorMessage = `${context}; its ${decoded.refusal.message}: it stays in stream ${a.stream} at sequence ${a.streamSeq} until its limits remove it`;
    return { record: { ...base, headers: kept, errorMessage, payload: null }, asBytes: null, poison: decoded.refusal.reason, refusal: null };
  }
  return decoded;
}

/** A message that is not an advisory the bridge knows, kept as bytes so that nothing is dropped. */
export function unknownAdvisoryRecord(m: StoredNatsMessage, c: RecordContext): Decoded {
  return {
    ...withBody({
      eventType: eventTypeOf(c, null),
      errorKind: 'UNKNOWN',
      errorMessage: `not a JetStream MAX_DELIVERIES or MSG_TERMINATED advisory (subject ${m.subject})`,
      queue: m.stream.slice(0, 200),
      source: 'nats',
      headers: { headers: headersOf(m.headers) },
      occurredAt: m.storedAt,
      dedupeKey: keyOf(m.stream, m.seq, String(m.storedAt.getTime())),
      origin: { kind: 'nats', bridge: c.bridge, stream: m.stream, subject: m.subject, sequence: m.seq },
    }, m.data, {}),
    poison: 'not_json',
  };
}

function keyOf(stream: string, seq: number, discriminator: string): string {
  return `nats:${stream}:${seq}:${discriminator}`;
}

function eventTypeOf(c: RecordContext, subject: string | null): string {
  return (c.eventType ?? (subject || DEFAULT_EVENT_TYPE)).slice(0, 200);
}

/** NATS headers as JSON: one value as a string, a repeated name as an array. */
export function headersOf(h: MsgHdrs | undefined): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (!h) return out;
  for (const name of h.keys()) {
    const values = h.values(name);
    out[name] = values.length === 1 ? values[0]! : values;
  }
  return out;
}

function firstValue(headers: Record<string, string | string[]>, lowerName: string): string | null {
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() !== lowerName) continue;
    const first = Array.isArray(value) ? value[0] : value;
    return first ? first.slice(0, 64 * 1024) : null;
  }
  return null;
}

function headersFit(headers: unknown): boolean {
  return Buffer.byteLength(JSON.stringify(headers ?? {})) <= MAX_HEADERS_BYTES;
}

function withBody(base: Omit<RecordDeadLetterInput, 'payload'>, data: Uint8Array, headers: Record<string, string | string[]>): Decoded {
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const contentType = firstValue(headers, 'content-type');
  const contentEncoding = firstValue(headers, 'content-encoding');
  if (body.length <= MAX_PAYLOAD_BYTES && !headersFit(base.headers)) {
    const size = Buffer.byteLength(JSON.stringify(base.headers));
    return { record: { ...base, payload: null }, asBytes: null, poison: null, refusal: { reason: 'bad_headers', message: `headers of ${size} bytes are over the ${MAX_HEADERS_BYTES}-byte cap` } };
  }
  return decodeBody(base, body, contentType, contentEncoding);
}
