// The `redis` target kind: XADD to a stream, optionally trimmed with MAXLEN ~. Redis streams do not
// de-duplicate: the entry's `id` field is the event's delivery id (targetKind.ts), the same on every
// attempt, for consumers to de-duplicate on (a crash after the XADD and before the outcome's write
// adds the entry again). Connections are shared per URL (brokers/redisConnections.ts).
import { z } from 'zod';
import type { ClaimedDeadLetter } from '../../db/sql/claimDueDeadLetters.ts';
import { isPrivateHost } from '../../domain/targetAddress.ts';
import { abortable, BrokerUnreachableError } from '../brokers/connectionState.ts';
import { createRedisConnections, parseRedisUrl, type RedisConnections } from '../brokers/redisConnections.ts';
import { MAX_RESPONSE_SUMMARY_BYTES, truncate, type DeliveryResult } from '../retry/delivery.ts';
import { outgoingBody, sourceHeaders, withBytes } from './sourceMessage.ts';
import { brokerRequest, deliveryId, failure, type TargetKind } from './targetKind.ts';

const RedisSettings = z.strictObject({
  url: z.string(),
  stream: z.string().min(1, 'stream must not be empty').max(1024, 'stream must be at most 1024 characters'),
  // A form sends text: digits are read as the number they spell.
  maxLen: z.preprocess((v) => (typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : v),
    z.number('maxLen must be a whole number').int('maxLen must be a whole number').min(1, 'maxLen must be at least 1')
      .max(1_000_000_000, 'maxLen must be at most 1000000000')).optional(),
});
type RedisSettings = z.infer<typeof RedisSettings>;

export interface RedisTargetOptions {
  /** The connection pool; default a pool of the kind's own. */
  connections?: RedisConnections;
}

/** The Redis Streams kind. */
export function createRedisTarget(options: RedisTargetOptions = {}): TargetKind<RedisSettings> {
  const connections = options.connections ?? createRedisConnections();
  return {
    kind: 'redis',
    label: 'Redis stream',
    fields: [
      { name: 'url', label: 'Redis URL', isRequired: true, isSecret: true, placeholder: 'rediss://user:password@cache.example.com:6379' },
      { name: 'stream', label: 'Stream key', isRequired: true, placeholder: 'orders' },
      { name: 'maxLen', label: 'Approximate maximum length (MAXLEN ~)', placeholder: 'optional, e.g. 100000' },
    ],
    settings: RedisSettings,
    reasons: { url: 'INVALID_URL' },
    check: (settings, { allowPrivateTarget }) => {
      const server = parseRedisUrl(settings.url);
      if ('problem' in server) return { field: 'url', reason: 'INVALID_URL', message: server.problem };
      if (!allowPrivateTarget && isPrivateHost(server.hostname)) {
        return { field: 'url', reason: 'PRIVATE_TARGET', message: `url points at a private, loopback or metadata address (${server.hostname}); set allowPrivateTarget to allow it` };
      }
      return null;
    },
    describe: (settings) => describeTarget(settings),
    publicSettings: (settings) => ({ stream: settings.stream, ...(settings.maxLen !== undefined && { maxLen: settings.maxLen }) }),
    deliver: (event, settings, policy, signal) => add(connections, event, settings, policy.timeoutMs, signal),
    health: () => connections.health().map((h) => ({ kind: 'redis', ...h, target: `redis on ${h.target}` })),
    close: () => connections.close(),
  };
}

async function add(connections: RedisConnections, event: ClaimedDeadLetter, settings: RedisSettings, timeoutMs: number, signal: AbortSignal): Promise<DeliveryResult> {
  const connection = connections.get(settings.url);
  const { payload, fields } = fieldsOf(event);
  const trim = settings.maxLen === undefined ? [] : ['MAXLEN', '~', String(settings.maxLen)];
  // The entry's fields other than the payload stand for its headers, the payload is the body. The
  // event's headers go one per name (`headers.<name>`), so a secret among them is redacted by name.
  const text = (v: string | Buffer) => (Buffer.isBuffer(v) ? `(${v.length} bytes)` : v);
  const entry = Object.fromEntries(Array.from({ length: fields.length / 2 }, (_, i) => [String(fields[2 * i]!), text(fields[2 * i + 1]!)]));
  const { payload: _body, headers: _headers, ...named } = entry;
  const own = isObject(event.headers) ? Object.fromEntries(Object.entries(event.headers).map(([name, value]) => [`headers.${name}`, value])) : {};
  const request = brokerRequest(describeTarget(settings), { ...(settings.maxLen !== undefined && { maxlen: `~ ${settings.maxLen}` }), ...named, ...own }, payload);
  try {
    const redis = await connection.client(signal);
    const entryId = await abortable(redis.xadd(settings.stream, ...trim, '*', ...fields), signal);
    return { ok: true, statusCode: null, responseBody: `entry ${entryId}`, request, response: { headers: { 'entry-id': String(entryId) } } };
  } catch (error) {
    if (signal.aborted) return failure('TIMED_OUT', `no XADD reply within ${timeoutMs} ms`, { kind: 'TIMEOUT', request });
    const message = connection.scrub(truncate(error instanceof Error ? error.message : String(error), MAX_RESPONSE_SUMMARY_BYTES));
    // A reply is Redis saying no (WRONGTYPE, OOM, NOPERM…); anything else is the connection.
    const isReply = error instanceof Error && error.name === 'ReplyError';
    if (isReply) return failure('FAILED', `Redis refused the XADD: ${message}`, { kind: 'REJECTED', request, response: { headers: { error: message } } });
    return failure('FAILED', error instanceof BrokerUnreachableError ? message : `Redis connection failed: ${message}`, { kind: 'UNREACHABLE', request });
  }
}

function describeTarget(settings: RedisSettings): string {
  const server = parseRedisUrl(settings.url);
  return `redis stream ${settings.stream} on ${'problem' in server ? 'an unparsable URL' : server.display}`;
}

/** The entry's fields: id (for consumers to de-duplicate), payload, and where the event came from. */
function fieldsOf(event: ClaimedDeadLetter): { payload: string | Buffer; fields: (string | Buffer)[] } {
  const original = sourceHeaders(event, 'redis');
  if (original) return { payload: outgoingBody(event).bytes, fields: sourceFieldsOf(event, original) };
  const payload = event.payloadJson;
  const fields: (string | Buffer)[] = [
    'id', deliveryId(event),
    'payload', payload,
    'lazarus-id', event.id.toString(),
    'attempt', String(event.attempts),
    'event-type', event.eventType,
  ];
  if (event.queue) fields.push('queue', event.queue);
  if (event.source) fields.push('source', event.source);
  if (event.headers && typeof event.headers === 'object' && Object.keys(event.headers).length > 0) fields.push('headers', JSON.stringify(event.headers));
  return { payload, fields };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * A redrive to source: the entry as it was (its payload's bytes, its other fields, a repeated field
 * once per value), with Lazarus's id, lazarus-id and attempt in place of any it had.
 */
function sourceFieldsOf(event: ClaimedDeadLetter, original: Record<string, unknown>): (string | Buffer)[] {
  const fields: (string | Buffer)[] = ['id', deliveryId(event), 'payload', outgoingBody(event).bytes, 'lazarus-id', event.id.toString(), 'attempt', String(event.attempts)];
  for (const [name, raw] of Object.entries(original)) {
    if (['id', 'payload', 'lazarus-id', 'attempt'].includes(name)) continue;
    const key = name.startsWith('$binary:') ? Buffer.from(name.slice(8), 'base64') : name;
    for (const value of Array.isArray(raw) ? raw : [raw]) {
      const restored = withBytes(value);
      fields.push(key, Buffer.isBuffer(restored) ? restored : typeof restored === 'string' ? restored : JSON.stringify(restored));
    }
  }
  return fields;
}
