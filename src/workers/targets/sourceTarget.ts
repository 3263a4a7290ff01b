// Redrive to source: the target of an event requeued with destination SOURCE, built from its origin
// (dead_letters.origin, written by the bridge that took it in) and the declared bridge it names:
//   amqp  → the amqp kind, through the bridge's broker URL: the default exchange with the queue's name
//           as routing key (RabbitMQ's way to publish straight to a queue), `mandatory` so a queue
//           that is gone fails the attempt; without a queue (no x-death), the exchange and first
//           routing key the message was first published with;
//   nats  → the nats kind: a JetStream publish to the origin's `sourceSubject` (a dead-letter stream's
//           message that names where it was first published), else its subject (advisories mode:
//           the original message's);
//   redis → the redis kind: XADD to the origin's `sourceStream` (the entry's source-stream field),
//           else its stream.
// A place that is the very stream the bridge reads (a NATS dead-letter stream, a Redis bridge's
// stream) is no source: the bridge would take the message in again as a new dead letter. Such an
// event needs a redirect (or its producer to name its source).
// A redirect (source_redirects) for `kind:place` replaces the place, and its bridge the broker.
// Every problem is a message for an INVALID_TARGET attempt, never a throw.
import type { BridgeDeclaration } from '../../config.ts';

export interface SourceRedirectRule {
  toPlace: string;
  toBridge: string | null;
}

export interface SourceTarget {
  /** The target kind to deliver through (amqp, nats, redis) and its settings. */
  kind: string;
  settings: Record<string, unknown>;
}

export type SourceResolution = { ok: true; target: SourceTarget } | { ok: false; problem: string };

export type ResolveSource = (origin: unknown) => Promise<SourceResolution>;

/** Bridge kinds by the origin kind they write. */
const ORIGIN_KIND_OF_BRIDGE: Record<string, string> = { rabbitmq: 'amqp', amqp: 'amqp', nats: 'nats', jetstream: 'nats', redis: 'redis' };

/** The origin's kind and place (queue, subject, stream), as redirects name them; null when it has none. */
export function sourcePlaceOf(origin: unknown): { kind: string; place: string; bridge: string } | null {
  if (!origin || typeof origin !== 'object' || Array.isArray(origin)) return null;
  const o = origin as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
  const bridge = text(o.bridge);
  const place = o.kind === 'amqp' ? text(o.queue) ?? text(o.exchange)
    : o.kind === 'nats' ? text(o.sourceSubject) ?? text(o.subject)
    : o.kind === 'redis' ? text(o.sourceStream) ?? text(o.stream) : null;
  return bridge && place ? { kind: o.kind as string, place, bridge } : null;
}

export function createSourceResolver(d: {
  bridges: readonly BridgeDeclaration[];
  findRedirect: (kind: string, place: string) => Promise<SourceRedirectRule | null>;
}): ResolveSource {
  const bridges = new Map(d.bridges.map((b) => [b.name, b]));
  return async (origin) => {
    const at = sourcePlaceOf(origin);
    if (!at) return { ok: false, problem: 'the event has no usable source: its origin names no bridge and no queue, subject or stream' };
    const redirect = await d.findRedirect(at.kind, at.place);
    const bridgeName = redirect?.toBridge ?? at.bridge;
    const bridge = bridges.get(bridgeName);
    if (!bridge) return { ok: false, problem: `source bridge "${bridgeName}" is not declared in LAZARUS_BRIDGES; declare it to redrive to ${at.kind} ${at.place}` };
    if (ORIGIN_KIND_OF_BRIDGE[bridge.kind] !== at.kind) {
      return { ok: false, problem: `source bridge "${bridgeName}" is a ${bridge.kind} bridge and cannot deliver to ${at.kind} ${at.place}` };
    }
    const url = bridge.settings.url;
    if (typeof url !== 'string') return { ok: false, problem: `source bridge "${bridgeName}" declares no url` };
    const o = origin as Record<string, unknown>;
    if (at.kind === 'amqp') {
      const queue = redirect ? redirect.toPlace : typeof o.queue === 'string' && o.queue !== '' ? o.queue : null;
      if (queue !== null) return { ok: true, target: { kind: 'amqp', settings: { url, exchange: '', routingKey: queue, mandatory: true } } };
      const keys = Array.isArray(o.routingKeys) ? o.routingKeys.filter((k) => typeof k === 'string') : [];
      return { ok: true, target: { kind: 'amqp', settings: { url, exchange: at.place, routingKey: keys[0] ?? '', mandatory: true } } };
    }
    const place = redirect?.toPlace ?? at.place;
    if (!redirect && isBridgeOwnPlace(bridge, at.kind, place, o)) {
      return { ok: false, problem: `${at.kind} ${place} is what bridge "${bridgeName}" reads its dead letters from, so it would come straight back; add a redirect from ${place} to the source, or have the producer name it (${at.kind === 'nats' ? 'header Lazarus-Source-Subject' : 'field source-stream'})` };
    }
    return at.kind === 'nats'
      ? { ok: true, target: { kind: 'nats', settings: { url, subject: place } } }
      : { ok: true, target: { kind: 'redis', settings: { url, stream: place } } };
  };
}

/** Whether `place` is where the bridge itself reads: a dead-letter stream's subject, a Redis bridge's stream. */
function isBridgeOwnPlace(bridge: BridgeDeclaration, kind: string, place: string, origin: Record<string, unknown>): boolean {
  if (kind === 'redis') return place === bridge.settings.stream;
  return typeof bridge.settings.stream === 'string' && origin.stream === bridge.settings.stream && place === origin.subject && !origin.sourceSubject;
}
