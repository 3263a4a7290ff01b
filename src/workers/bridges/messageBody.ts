// A broker message's body as a dead letter's payload, the same for every bridge kind whose messages
// carry a content type (RabbitMQ's properties, NATS' headers):
//  - a JSON content type (or none) whose bytes are UTF-8 JSON stays JSON, every number as it came
//    (12345678901234567890 is not rounded: db/exactJson.ts); the same bytes that claimed
//    JSON and are not are kept as bytes and counted as poison (not_utf8 / not_json);
//  - a UTF-8 text/* body without NUL is { "$text", "contentType" };
//  - anything else, or an encoded body (content-encoding other than identity), is kept byte-exact
//    as { "$binary": base64, "contentType", "contentEncoding" };
//  - a body over the payload cap is refused (too_large): nothing of it is stored.
// Redrive to source turns $text and $binary back into these bytes (workers/targets/sourceMessage.ts).
import { MAX_PAYLOAD_BYTES, type RecordDeadLetterInput } from '../../domain/recordInput.ts';
import { parseJsonKeepingNumbers } from '../../db/exactJson.ts';
import type { BridgeMessage, PoisonReason } from './bridgeKind.ts';

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export type DecodedMessage = Pick<BridgeMessage, 'record' | 'asBytes' | 'poison' | 'refusal'>;

/** The record for `base` with `body` as its payload, by the rules above. */
export function decodeBody(base: Omit<RecordDeadLetterInput, 'payload'>, body: Buffer, contentType: string | null, contentEncoding: string | null): DecodedMessage {
  const bytes = (): RecordDeadLetterInput => ({
    ...base,
    payload: { $binary: body.toString('base64'), contentType, ...(contentEncoding && { contentEncoding }) },
  });
  if (body.length > MAX_PAYLOAD_BYTES) {
    return { record: { ...base, payload: null }, asBytes: null, poison: null, refusal: { reason: 'too_large', message: `body of ${body.length} bytes is over the ${MAX_PAYLOAD_BYTES}-byte payload cap` } };
  }
  const isEncoded = contentEncoding !== null && contentEncoding !== 'identity';
  const claimsJson = contentType !== null && /^(application|text)\/([\w.+-]+\+)?json\b/i.test(contentType);
  if (!isEncoded && (claimsJson || contentType === null)) {
    let poison: PoisonReason;
    try {
      return { record: { ...base, payload: parseJsonKeepingNumbers(UTF8.decode(body)) }, asBytes: bytes, poison: null, refusal: null };
    } catch (error) {
      poison = error instanceof SyntaxError ? 'not_json' : 'not_utf8';
    }
    return { record: bytes(), asBytes: null, poison: claimsJson ? poison : null, refusal: null };
  }
  if (!isEncoded && contentType !== null && /^text\//i.test(contentType)) {
    try {
      const text = UTF8.decode(body);
      if (!text.includes('\u0000')) return { record: { ...base, payload: { $text: text, contentType } }, asBytes: bytes, poison: null, refusal: null };
    } catch {
      // not UTF-8: kept as bytes below
    }
  }
  return { record: bytes(), asBytes: null, poison: null, refusal: null };
}
