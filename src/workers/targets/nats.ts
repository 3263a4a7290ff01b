// The `nats` target kind: a JetStream publish with ack to a subject. Nats-Msg-Id is the event's
// delivery id (targetKind.ts), so JetStream's duplicate window drops a redelivery made after a crash
// between the ack and the outcome's write; a requeue after SUCCEEDED is `<id>.<generation>`, a new
// message. The body is the payload as JSON; headers carry the Lazarus id, the attempt and the
// event's source coordinates. Connections are shared per URL (brokers/natsConnections.ts).
import { JetStreamApiError } from '@nats-io/jetstream';
import { ClosedConnectionError, ConnectionError, headers as natsHeaders, RequestError, TimeoutError, type MsgHdrs } from '@nats-io/transport-node';
import { z } from 'zod';
import type { ClaimedDeadLetter } from '../../db/sql/claimDueDeadLetters.ts';
import { isPrivateHost } from '../../domain/targetAddress.ts';
import { abortable, BrokerUnreachableError } from '../brokers/connectionState.ts';
import { createNatsConnections, parseNatsUrl, type NatsConnections } from '../brokers/natsConnections.ts';
import { truncate, MAX_RESPONSE_SUMMARY_BYTES, type DeliveryResponse, type DeliveryResult } from '../retry/delivery.ts';
import { outgoingBody, sourceHeaders, type OutgoingBody } from './sourceMessage.ts';
import { brokerRequest, deliveryId, failure, oncePerObject, type TargetKind } from './targetKind.ts';

// A NATS subject: dot-separated tokens, no whitespace, no wildcards (a publish names one subject).
const SUBJECT = /^[^\s.*>]+(\.[^\s.*>]+)*$/;
// An HTTP token, as NATS header names are.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// A stream name: no whitespace, dots, wildcards or path separators (the server's rule).
const STREAM = /^[^\s.*>/\\]+$/;

const NatsSettings = z.strictObject({
  url: z.string(),
  subject: z.string().max(255, 'subject must be at most 255 characters')
    .regex(SUBJECT, 'subject must be a NATS subject without wildcards, e.g. orders.retry'),
  expectedStream: z.string().max(255, 'expectedStream must be at most 255 characters')
    .regex(STREAM, 'expectedStream must be a stream name').optional(),
});
type NatsSettings = z.infer<typeof NatsSettings>;

export interface NatsTargetOptions {
  /** The connection pool; default a pool of the kind's own. */
  connections?: NatsConnections;
}

/** The NATS JetStream kind. */
export function createNatsTarget(options: NatsTargetOptions = {}): TargetKind<NatsSettings> {
  const connections = options.connections ?? createNatsConnections();
  // Parsed settings are shared by the events of one claim (targetKind.ts): described once for them all.
  const describedOnce = oncePerObject(describeTarget);
  return {
    kind: 'nats',
    label: 'NATS JetStream',
    fields: [
      { name: 'url', label: 'Server URL', isRequired: true, isSecret: true, placeholder: 'nats://user:password@nats.example.com:4222' },
      { name: 'subject', label: 'Subject', isRequired: true, placeholder: 'orders.retry' },
      { name: 'expectedStream', label: 'Expected stream', placeholder: 'ORDERS (optional: refuse if another stream takes the subject)' },
    ],
    settings: NatsSettings,
    reasons: { url: 'INVALID_URL' },
    check: (settings, { allowPrivateTarget }) => {
      const servers = parseNatsUrl(settings.url);
      if ('problem' in servers) return { field: 'url', reason: 'INVALID_URL', message: servers.problem };
      const inside = servers.hostnames.find((h) => isPrivateHost(h));
      if (inside && !allowPrivateTarget) {
        return { field: 'url', reason: 'PRIVATE_TARGET', message: `url points at a private, loopback or metadata address (${inside}); set allowPrivateTarget to allow it` };
      }
      return null;
    },
    describe: (settings) => describeTarget(settings),
    publicSettings: (settings) => {
      const servers = parseNatsUrl(settings.url);
      const hasCredentials = !('problem' in servers) && !!(servers.user || servers.token);
      return { subject: settings.subject, ...(settings.expectedStream && { expectedStream: settings.expectedStream }), ...(!hasCredentials && { url: settings.url }) };
    },
    deliver: (event, settings, policy, signal) => publish(connections, event, settings, describedOnce(settings), policy.timeoutMs, signal),
    health: () => connections.health().map((h) => ({ kind: 'nats', ...h, target: `nats on ${h.target}` })),
    close: () => connections.close(),
  };
}

function describeTarget(settings: NatsSettings): string {
  return `nats subject ${settings.subject} on ${serversOf(settings.url)}`;
}

function serversOf(url: string): string {
  const servers = parseNatsUrl(url);
  return 'problem' in servers ? 'an unparsable URL' : servers.display;
}

async function publish(
  connections: NatsConnections, event: ClaimedDeadLetter, settings: NatsSettings, target: string, timeoutMs: number, signal: AbortSignal,
): Promise<DeliveryResult> {
  const connection = connections.get(settings.url);
  // A redrive to source sends the original bytes and content type (sourceMessage.ts).
  const outgoing = outgoingBody(event);
  const body = outgoing.bytes;
  const headers = headersOf(event, outgoing);
  const msgID = deliveryId(event);
  const request = brokerRequest(target, {
    'Nats-Msg-Id': msgID, ...(settings.expectedStream && { 'Nats-Expected-Stream': settings.expectedStream }), ...textOf(headers),
  }, body);
  try {
    const js = await connection.jetstream(signal);
    const ack = await abortable(js.publish(settings.subject, body, {
      msgID, headers, timeout: timeoutMs,
      ...(settings.expectedStream && { expect: { streamName: settings.expectedStream } }),
    }), signal);
    const response = { headers: { stream: ack.stream, seq: String(ack.seq), duplicate: String(ack.duplicate), ...(ack.domain && { domain: ack.domain }) } };
    return { ok: true, statusCode: null, responseBody: `stream ${ack.stream} seq ${ack.seq}${ack.duplicate ? ', a duplicate JetStream dropped' : ''}`, request, response };
  } catch (error) {
    return { ...natsFailure(error, settings.subject, timeoutMs, signal, connection.scrub), request, ...(error instanceof JetStreamApiError && { response: apiErrorOf(error) }) };
  }
}

/** The message's headers as text, one value per name (NATS headers may repeat a name). */
function textOf(headers: MsgHdrs): Record<string, string> {
  return Object.fromEntries(headers.keys().map((name) => [name, headers.values(name).join(', ')]));
}

/** What JetStream's API answered when it refused the publish. */
function apiErrorOf(error: JetStreamApiError): DeliveryResponse {
  const { code, err_code: errCode, description } = error.apiError();
  return { headers: { code: String(code), 'err-code': String(errCode), description } };
}

/**
 * Lazarus-Id, -Attempt, -Event-Type, -Queue and -Source, then the event's own headers that NATS can
 * carry: a token name, one line of text. Names starting `Nats-` are left out (they steer JetStream:
 * an old Nats-Msg-Id or Nats-Expected-Stream would override this delivery's), and so are `Lazarus-`.
 */
function headersOf(event: ClaimedDeadLetter, body: OutgoingBody): MsgHdrs {
  const h = natsHeaders();
  if (body.contentType) h.set('Content-Type', body.contentType);
  if (body.contentEncoding) h.set('Content-Encoding', body.contentEncoding);
  h.set('Lazarus-Id', event.id.toString());
  h.set('Lazarus-Attempt', String(event.attempts));
  h.set('Lazarus-Event-Type', event.eventType);
  if (event.queue) h.set('Lazarus-Queue', event.queue);
  if (event.source) h.set('Lazarus-Source', event.source);
  // A redrive to source: the original's own headers (a repeated one as each of its values).
  const original = sourceHeaders(event, 'nats');
  if (original) {
    for (const [name, raw] of Object.entries(original)) {
      if (!HEADER_NAME.test(name) || /^(nats|lazarus|content-type|content-encoding)(-|$)/i.test(name)) continue;
      for (const value of Array.isArray(raw) ? raw : [raw]) if (typeof value === 'string' && !/[\r\n]/.test(value)) h.append(name, value);
    }
  } else if (event.headers && typeof event.headers === 'object' && !Array.isArray(event.headers)) {
    for (const [name, raw] of Object.entries(event.headers)) {
      if (!HEADER_NAME.test(name) || /^(nats|lazarus)-/i.test(name) || raw === null) continue;
      const value = typeof raw === 'string' ? raw : JSON.stringify(raw);
      if (!/[\r\n]/.test(value)) h.set(name, value);
    }
  }
  return h;
}

function natsFailure(error: unknown, subject: string, timeoutMs: number, signal: AbortSignal, scrub: (text: string) => string): DeliveryResult {
  const message = scrub(truncate(error instanceof Error ? error.message : String(error), MAX_RESPONSE_SUMMARY_BYTES));
  if (signal.aborted || error instanceof TimeoutError) return failure('TIMED_OUT', `no JetStream ack within ${timeoutMs} ms`, { kind: 'TIMEOUT' });
  if (error instanceof BrokerUnreachableError || error instanceof ConnectionError || error instanceof ClosedConnectionError) {
    return failure('FAILED', message, { kind: 'UNREACHABLE' });
  }
  // No responders (the client calls it "jetstream is not enabled"): no stream takes the subject.
  const cause = error instanceof Error ? error.cause : null;
  if (cause instanceof RequestError && cause.isNoResponders()) return failure('FAILED', `no JetStream stream takes subject ${subject} (503 no responders)`, { kind: 'REJECTED' });
  if (error instanceof JetStreamApiError) return failure('FAILED', `JetStream refused the message: ${message} (error ${error.code})`, { kind: 'REJECTED' });
  return failure('FAILED', message, { kind: 'REJECTED' });
}
