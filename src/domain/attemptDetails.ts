// What an attempt keeps of its request and response, bounded whatever a target kind or a receiver
// hands over. One place for every kind: secrets redacted by header name, each field capped. The
// caps match the CHECKs of migration 20261205120000_attempt_details, and docs/reading.md states them.

export const MAX_TARGET_BYTES = 256;
export const MAX_REQUEST_HEADERS_BYTES = 1024;
export const MAX_RESPONSE_HEADERS_BYTES = 2048;
export const MAX_HEADER_NAME_BYTES = 64;
export const MAX_HEADER_VALUE_BYTES = 512;
export const MAX_ERROR_MESSAGE_BYTES = 2048;
export const REDACTED = '[redacted]';
/** The key of the entry that stands for headers left out once the cap is reached. */
export const OMITTED_KEY = '…';

// Signatures, credentials and session cookies, in either direction. Matched on the header name,
// so a kind's own secret header (x-api-key, nats-auth-token…) is covered without a list per kind.
const SECRET_HEADER = /authorization|cookie|signature|secret|token|password|passwd|api[-_]?key|credential|session/i;

export function isSecretHeader(name: string): boolean {
  return SECRET_HEADER.test(name);
}

/**
 * Headers as stored: names lower-cased, secret values replaced by `[redacted]`, names cut to 64
 * bytes and values to 512 (ending in `…`), and entries kept in order while the object's JSON text
 * (as PostgreSQL prints jsonb) fits `maxBytes`; the rest are counted under the key `…`.
 */
export function boundHeaders(headers: Readonly<Record<string, string>>, maxBytes: number): Record<string, string> {
  const kept: Record<string, string> = {};
  const entries = Object.entries(headers);
  // jsonb prints `{"a": "b", "c": "d"}`: the JSON text plus a space after each colon and comma.
  let size = 2;
  for (let i = 0; i < entries.length; i++) {
    const [rawName, rawValue] = entries[i]!;
    const name = cutText(storable(rawName).toLowerCase(), MAX_HEADER_NAME_BYTES);
    if (name === OMITTED_KEY || name in kept) continue;
    const value = isSecretHeader(name) ? REDACTED : cutText(storable(String(rawValue)), MAX_HEADER_VALUE_BYTES);
    const entrySize = jsonBytes(name) + jsonBytes(value) + 4;
    // Room is kept for the omission entry itself, should a later header not fit.
    const reserve = i < entries.length - 1 ? OMISSION_BYTES : 0;
    if (size + entrySize + reserve > maxBytes) {
      kept[OMITTED_KEY] = `${entries.length - i} more not kept`;
      return kept;
    }
    kept[name] = value;
    size += entrySize;
  }
  return kept;
}

/** `"…": "<n> more not kept", ` as jsonb prints it is under 40 bytes. */
const OMISSION_BYTES = 40;

/** Text cut to `maxBytes` of UTF-8, ending in `…` when cut; NUL and lone surrogates removed (PostgreSQL refuses them). */
export function cutText(text: string, maxBytes: number): string {
  const clean = storable(text);
  if (Buffer.byteLength(clean) <= maxBytes) return clean;
  let cut = clean.slice(0, maxBytes);
  while (Buffer.byteLength(cut) > maxBytes - 3) cut = cut.slice(0, -1);
  return `${storable(cut)}…`;
}

// Almost every header is plain ASCII: the checks below run per header of every attempt, so the
// plain case is one regular expression instead of new strings (7.5 µs an attempt of a RabbitMQ
// redrive went to bounding its headers: bench:broker:amqp, --cpu-prof).
const NEEDS_CLEANING = /[\u0000\ud800-\udfff]/;
const PLAIN_JSON = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function storable(text: string): string {
  return NEEDS_CLEANING.test(text) ? text.replaceAll('\u0000', '').toWellFormed() : text;
}

/** Bytes of `text` as a JSON string: printable ASCII without `"` or `\` is itself plus its quotes. */
function jsonBytes(text: string): number {
  return PLAIN_JSON.test(text) ? text.length + 2 : Buffer.byteLength(JSON.stringify(text));
}
