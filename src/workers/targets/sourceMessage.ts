// What a delivery sends as the message body, and, for a redrive to source, what the original message
// had. A bridge keeps a body that is not JSON as { "$binary": base64, "contentType", "contentEncoding" }
// or { "$text", "contentType" } (rabbitmq.ts, natsRecords.ts, redisEntry.ts); a redrive to source
// sends those original bytes with their content type, not the JSON wrapper. A policy target gets the
// payload as JSON, wrapper and all, as it always has: the stored JSON text itself, so a number
// JavaScript cannot carry goes out exactly.
import type { ClaimedDeadLetter } from '../../db/sql/claimDueDeadLetters.ts';

export interface OutgoingBody {
  bytes: Buffer;
  /** Null when the original had none (a Redis entry, a NATS message without the header). */
  contentType: string | null;
  contentEncoding: string | null;
}

type Event = Pick<ClaimedDeadLetter, 'payload' | 'payloadJson' | 'headers' | 'isToSource'>;

const BINARY_KEYS = new Set(['$binary', 'contentType', 'contentEncoding']);
const TEXT_KEYS = new Set(['$text', 'contentType']);

export function outgoingBody(event: Event): OutgoingBody {
  const json: OutgoingBody = { bytes: Buffer.from(event.payloadJson), contentType: 'application/json', contentEncoding: null };
  if (!event.isToSource) return json;
  const p = objectOrNull(event.payload);
  if (!p) return json;
  const keys = Object.keys(p);
  if (typeof p.$binary === 'string' && keys.every((k) => BINARY_KEYS.has(k))) {
    return { bytes: Buffer.from(p.$binary, 'base64'), contentType: textOrNull(p.contentType), contentEncoding: textOrNull(p.contentEncoding) };
  }
  if (typeof p.$text === 'string' && keys.every((k) => TEXT_KEYS.has(k))) {
    return { bytes: Buffer.from(p.$text, 'utf8'), contentType: textOrNull(p.contentType), contentEncoding: null };
  }
  return json;
}

/**
 * For a redrive to source: the original message's headers as the bridge kept them (RabbitMQ and NATS:
 * `headers.headers`; Redis: the entry's other fields, `headers` itself). Null for a policy delivery,
 * or when the event's headers are not in that shape (recorded by other means).
 */
export function sourceHeaders(event: Event, kind: 'amqp' | 'nats' | 'redis'): Record<string, unknown> | null {
  if (!event.isToSource) return null;
  const kept = objectOrNull(event.headers);
  return kind === 'redis' ? kept : objectOrNull(kept?.headers);
}

/** For a redrive to source from RabbitMQ: the original's AMQP properties, as the bridge kept them. */
export function sourceProperties(event: Event): Record<string, unknown> | null {
  if (!event.isToSource) return null;
  return objectOrNull(objectOrNull(event.headers)?.properties) ?? {};
}

/** A value the bridges kept as { "$binary": base64 } as its bytes again; arrays and tables inside too. */
export function withBytes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withBytes);
  const o = objectOrNull(value);
  if (!o) return value;
  if (typeof o.$binary === 'string' && Object.keys(o).length === 1) return Buffer.from(o.$binary, 'base64');
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, withBytes(v)]));
}

function objectOrNull(value: unknown): Record<string, unknown> | null {
  return value && typeof value === 'object' && !Array.isArray(value) ? value as Record<string, unknown> : null;
}

function textOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}
