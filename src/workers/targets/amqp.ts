// The amqp target kind: publishes each event to a RabbitMQ exchange as a persistent message, and
// counts it delivered only when the broker confirms it (publisher confirms). message-id is the
// event's delivery id (`<id>`, `<id>.<generation>` after a requeue from SUCCEEDED), so a receiver or
// a de-duplicating plugin drops a redelivery after a crash. With `mandatory`, a message no queue is
// bound to is returned by the broker and the attempt fails (REJECTED) instead of vanishing.
// Connections are shared per URL (../brokers/amqpConnections.ts); the URL holds the credentials and
// is a secret setting: descriptions, health and errors name host and vhost only.
import { randomUUID } from 'node:crypto';
import type { LookupFunction } from 'node:net';
import type { ConfirmChannel, Message, Options } from 'amqplib';
import { z } from 'zod';
import { isPrivateHost } from '../../domain/targetAddress.ts';
import type { ClaimedDeadLetter } from '../../db/sql/claimDueDeadLetters.ts';
import { amqpAddress, AmqpUnreachableError, createAmqpConnections, redact, type AmqpConnections } from '../brokers/amqpConnections.ts';
import { MAX_RESPONSE_SUMMARY_BYTES, truncate, type DeliveryRequest, type DeliveryResult } from '../retry/delivery.ts';
import { outgoingBody, sourceHeaders, sourceProperties, withBytes } from './sourceMessage.ts';
import { brokerRequest, deliveryId, failure, oncePerObject, type TargetHealth, type TargetKind } from './targetKind.ts';
import { lookupPublicOnly, PrivateAddressError } from './webhook.ts';

const AmqpUrl = z.string().max(2000, 'url must be an amqp:// or amqps:// URL of at most 2000 characters')
  .refine((url) => amqpAddress(url) !== null, 'url must be an amqp:// or amqps:// URL of at most 2000 characters');
// The console sends every setting as text: "true"/"false" is read as the boolean.
const Flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
const AmqpSettings = z.strictObject({
  url: AmqpUrl,
  exchange: z.string().max(255, 'exchange must be at most 255 characters').default(''),
  routingKey: z.string().max(255, 'routingKey must be at most 255 characters').default(''),
  mandatory: Flag.default(false),
});
type AmqpSettings = z.infer<typeof AmqpSettings>;

export interface AmqpTargetOptions {
  /** Shared connections; default a set of its own, closed by `close()`. */
  connections?: AmqpConnections;
}

export function createAmqpTarget(options: AmqpTargetOptions = {}): TargetKind<AmqpSettings> {
  const connections = options.connections ?? createAmqpConnections();
  const publicOnly = lookupPublicOnly() as unknown as LookupFunction;
  // Returned (unroutable) messages by their publish tag; the broker returns before it confirms.
  const returned = new Map<string, Message>();
  const watched = new WeakSet<ConfirmChannel>();
  const channelErrors = new WeakMap<ConfirmChannel, Error>();
  const watch = (channel: ConfirmChannel) => {
    if (watched.has(channel)) return;
    watched.add(channel);
    channel.on('return', (message: Message) => {
      const tag = message.properties.headers?.['x-lazarus-publish'];
      if (typeof tag === 'string') returned.set(tag, message);
    });
    channel.on('error', (error: Error) => channelErrors.set(channel, error));
  };
  const describeTarget = (settings: AmqpSettings) => `amqp ${settings.exchange ? `exchange ${settings.exchange}` : 'default exchange'}` +
    `${settings.routingKey ? ` key ${settings.routingKey}` : ''} on ${where(settings)}`;
  // Parsed settings are shared by the events of one claim (targetKind.ts): described once for them all.
  const describedOnce = oncePerObject(describeTarget);

  return {
    kind: 'amqp',
    label: 'RabbitMQ (AMQP 0-9-1)',
    fields: [
      { name: 'url', label: 'Broker URL', isRequired: true, isSecret: true, placeholder: 'amqps://user:password@rabbit.example.com/vhost' },
      { name: 'exchange', label: 'Exchange (empty: the default exchange)', placeholder: 'orders' },
      { name: 'routingKey', label: 'Routing key', placeholder: 'order.placed' },
      { name: 'mandatory', label: 'Mandatory: fail when no queue is bound (true/false)', placeholder: 'false' },
    ],
    settings: AmqpSettings,
    reasons: { url: 'INVALID_URL' },
    check: (settings, { allowPrivateTarget }) => {
      const hostname = URL.parse(settings.url)!.hostname;
      if (allowPrivateTarget || !isPrivateHost(hostname)) return null;
      return {
        field: 'url', reason: 'PRIVATE_TARGET',
        message: `url points at a private, loopback or metadata address (${hostname}); set allowPrivateTarget to allow it`,
      };
    },
    describe: (settings) => describeTarget(settings),
    publicSettings: (settings) => {
      const url = URL.parse(settings.url)!;
      return { url: `${url.protocol}//${url.host}${url.pathname}`, exchange: settings.exchange, routingKey: settings.routingKey, mandatory: settings.mandatory };
    },
    deliver: async (event, settings, policy, signal) => {
      const message = messageOf(event, settings, describedOnce(settings));
      const { request } = message;
      let channel: ConfirmChannel;
      try {
        channel = await connections.confirmChannel(settings.url, { signal, ...(!policy.allowPrivateTarget && { lookup: publicOnly }) });
      } catch (error) {
        if (signal.aborted) return failure('TIMED_OUT', `no connection to ${where(settings)} within ${policy.timeoutMs} ms`, { kind: 'TIMEOUT', request });
        const cause = (error as { cause?: unknown }).cause;
        if (cause instanceof PrivateAddressError) return failure('PERMANENT_FAILURE', cause.message, { kind: 'INVALID_TARGET', request });
        const text = error instanceof AmqpUnreachableError ? error.message : String(error);
        return failure('FAILED', truncate(`cannot connect to ${where(settings)}: ${redact(text, settings.url)}`, MAX_RESPONSE_SUMMARY_BYTES), { kind: 'UNREACHABLE', request });
      }
      watch(channel);
      return publish(channel, message, settings, policy.timeoutMs, signal);
    },
    health: () => worstByTarget(connections.health().map((h) => ({
      kind: 'amqp', target: `${h.host} vhost ${h.vhost}`, state: h.state, lastError: h.lastError, lastErrorAt: h.lastErrorAt,
    }))),
    close: () => connections.close(),
  };

  function publish(channel: ConfirmChannel, message: AmqpMessage, settings: AmqpSettings, timeoutMs: number, signal: AbortSignal) {
    const { tag, request } = message;
    return new Promise<DeliveryResult>((resolve) => {
      const finish = (result: DeliveryResult) => {
        signal.removeEventListener('abort', onAbort);
        if (tag) returned.delete(tag);
        resolve(result);
      };
      const onAbort = () => finish(failure('TIMED_OUT', `no confirm from ${where(settings)} within ${timeoutMs} ms`, { kind: 'TIMEOUT', request }));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        channel.publish(settings.exchange, settings.routingKey, message.body, message.options, (error: unknown) => {
          const bounced = tag ? returned.get(tag) : undefined;
          if (error) {
            const why = channelErrors.get(channel)?.message ?? (error as Error).message ?? String(error);
            return finish(failure('FAILED', truncate(`${where(settings)} refused the message: ${redact(why, settings.url)}`, MAX_RESPONSE_SUMMARY_BYTES),
              { kind: 'REJECTED', request, response: { headers: { confirm: 'basic.nack' } } }));
          }
          if (bounced) {
            const { replyCode, replyText } = bounced.fields as unknown as { replyCode: number; replyText: string };
            return finish(failure('FAILED', `unroutable: ${replyCode} ${replyText} (exchange "${settings.exchange}", routing key "${settings.routingKey}")`,
              { kind: 'REJECTED', request, response: { headers: { confirm: 'basic.ack', return: 'basic.return', 'reply-code': String(replyCode), 'reply-text': replyText } } }));
          }
          finish({ ok: true, statusCode: null, responseBody: null, request, response: { headers: { confirm: 'basic.ack' } } });
        });
      } catch (error) {
        // A channel closed under us, or headers past amqplib's 64 KiB table.
        const isTooLarge = error instanceof RangeError;
        finish(failure(isTooLarge ? 'PERMANENT_FAILURE' : 'FAILED', truncate(`cannot publish to ${where(settings)}: ${redact((error as Error).message, settings.url)}`, MAX_RESPONSE_SUMMARY_BYTES),
          { kind: isTooLarge ? 'INVALID_TARGET' : 'UNREACHABLE', request }));
      }
    });
  }
}

function where(settings: { url: string }): string {
  const address = amqpAddress(settings.url)!;
  return `${address.host} vhost ${address.vhost}`;
}

interface AmqpMessage {
  tag: string | null;
  body: Buffer;
  options: Options.Publish;
  request: DeliveryRequest;
}

/**
 * The message and what the attempt records of it: the properties and headers as sent (the
 * `x-lazarus-publish` tag, which pairs a returned message with its publish, left out), in that order
 * so Lazarus's own survive the cap on recorded headers.
 */
function messageOf(event: ClaimedDeadLetter, settings: AmqpSettings, target: string): AmqpMessage {
  // Only a mandatory message can come back (basic.return), so only it needs a tag to pair it.
  const tag = settings.mandatory ? randomUUID() : null;
  // A redrive to source sends the original bytes, content type and properties (sourceMessage.ts).
  const outgoing = outgoingBody(event);
  const body = outgoing.bytes;
  const options = {
    type: event.eventType, timestamp: Math.floor(event.occurredAt.getTime() / 1000), ...originalProperties(event),
    persistent: true, mandatory: settings.mandatory, messageId: deliveryId(event),
    contentType: outgoing.contentType ?? undefined, contentEncoding: outgoing.contentEncoding ?? undefined, headers: headersOf(event, tag),
  } satisfies Options.Publish;
  const { 'x-lazarus-publish': _tag, ...sent } = options.headers;
  const lazarusFirst = Object.fromEntries(Object.entries(sent).sort(([a], [b]) => Number(!a.startsWith('x-lazarus-')) - Number(!b.startsWith('x-lazarus-'))));
  const request = brokerRequest(target, {
    'message-id': options.messageId, 'content-type': options.contentType, 'content-encoding': options.contentEncoding, 'delivery-mode': '2 (persistent)', type: options.type,
    timestamp: String(options.timestamp), ...(settings.mandatory && { mandatory: 'true' }), ...lazarusFirst,
  }, body);
  return { tag, body, options, request };
}

/**
 * The event's own scalar headers (a redrive to source carries what the message had), then Lazarus's:
 * its id, the attempt, the type and the source coordinates. `x-lazarus-publish` (mandatory
 * messages only) pairs a returned message with its publish.
 */
function headersOf(event: ClaimedDeadLetter, tag: string | null): Record<string, unknown> {
  const original = sourceHeaders(event, 'amqp');
  // The broker's own x- headers (x-death, x-first-death-*, x-delivery-count) describe the old life.
  const own = original ? Object.fromEntries(Object.entries(original).filter(([name]) => !/^x-/i.test(name)).map(([name, v]) => [name, withBytes(v)]))
    : event.headers && typeof event.headers === 'object' && !Array.isArray(event.headers)
    ? Object.fromEntries(Object.entries(event.headers).filter(([, v]) => ['string', 'number', 'boolean'].includes(typeof v)))
    : {};
  return {
    ...own,
    'x-lazarus-id': event.id.toString(),
    'x-lazarus-attempt': event.attempts,
    'x-lazarus-event-type': event.eventType,
    ...(event.queue && { 'x-lazarus-queue': event.queue }),
    ...(event.source && { 'x-lazarus-source': event.source }),
    ...(tag && { 'x-lazarus-publish': tag }),
  };
}

/**
 * A redrive to source: the original's properties that say what the message is and who waits for it.
 * message-id stays Lazarus's; user-id (RabbitMQ checks it against the connection's user) and
 * expiration (the message would expire again) are left out.
 */
function originalProperties(event: ClaimedDeadLetter): Record<string, unknown> {
  const p = sourceProperties(event);
  if (!p) return {};
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const seconds = typeof p.timestamp === 'string' ? Date.parse(p.timestamp) / 1000 : Number.NaN;
  return Object.fromEntries(Object.entries({
    correlationId: text(p.correlationId), replyTo: text(p.replyTo), type: text(p.type), appId: text(p.appId),
    priority: typeof p.priority === 'number' ? p.priority : undefined,
    timestamp: Number.isFinite(seconds) ? Math.floor(seconds) : undefined,
  }).filter(([, v]) => v !== undefined));
}

const STATE_RANK = { DISCONNECTED: 0, CONNECTING: 1, CONNECTED: 2 } as const;

/**
 * One row per host and vhost: connections with other credentials to the same place share a name
 * (the user is not shown), so the worst state stands for them all, with the latest error.
 */
function worstByTarget(rows: TargetHealth[]): TargetHealth[] {
  const byTarget = new Map<string, TargetHealth>();
  for (const row of rows) {
    const seen = byTarget.get(row.target);
    if (!seen) {
      byTarget.set(row.target, row);
      continue;
    }
    const worse = STATE_RANK[row.state] < STATE_RANK[seen.state] ? row : seen;
    const latest = (row.lastErrorAt?.getTime() ?? 0) > (seen.lastErrorAt?.getTime() ?? 0) ? row : seen;
    byTarget.set(row.target, { ...worse, lastError: latest.lastError, lastErrorAt: latest.lastErrorAt });
  }
  return [...byTarget.values()];
}
