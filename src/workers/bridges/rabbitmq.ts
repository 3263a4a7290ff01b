// RabbitMQ bridge: consumes a queue bound to a dead-letter exchange, each message one dead letter.
// - x-death is the failure context: the reason (rejected, expired, maxlen, delivery_limit) and the
//   queue of the latest death, its count and time; the exchange and routing keys of the oldest
//   entry (what the message was first published with) go into `origin`.
// - properties and headers are kept in `headers` as { properties, headers } (timestamps as ISO
//   text, byte arrays as { "$binary": base64 }).
// - a JSON body (content type absent, application/json or +json) stays JSON; a text/* body that is
//   UTF-8 is { "$text", "contentType" }; anything else is { "$binary": base64, "contentType" },
//   byte-exact. A body that claimed JSON and is not UTF-8 or not JSON is kept the same way and counted.
// - the dedupe key is `amqp:<vhost>/<queue>:<sha256 of body and properties>`: a redelivery after a
//   crash between commit and ack has the same bytes and x-death, so it is stored once.
// Lifecycle of a source: open (a channel of its own on the kind's shared connection to the URL,
// prefetch, consume) → messages buffer until taken → acked after commit (a batch's acks in one
// `multiple` ack where that settles nothing else: see flushAcks) / nacked without requeue when
// refused (to the queue's own dead-letter exchange, when it has one) → close (the channel's
// unacked messages go back to the queue). A lost connection (the broker restarted), a closed channel
// or a cancelled consumer is reported through ctx.failed; the runner closes the source and opens a
// new one, which sets the consumer up again on the reconnected connection (workers/brokers/
// amqpConnections.ts: one connection per URL, reconnect with backoff). Acks never cross channels: a
// delivery tag belongs to the channel that received it. The kind's connections are its own, apart
// from the amqp target's publishers (RabbitMQ's flow control blocks a publishing connection), and
// closed when the last source closes, so a stopped service holds no socket.
import { createHash } from 'node:crypto';
import type { Channel, ConsumeMessage } from 'amqplib';
import { z } from 'zod';
import { MAX_BATCH, type RecordDeadLetterInput } from '../../domain/recordInput.ts';
import { createAmqpConnections, type AmqpConnections } from '../brokers/amqpConnections.ts';
import type { BridgeContext, BridgeKind, BridgeMessage, BridgeSource } from './bridgeKind.ts';
import { decodeBody, type DecodedMessage } from './messageBody.ts';

export const DEFAULT_PREFETCH = 100;
const DEFAULT_EVENT_TYPE = 'amqp.message';

const amqpUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return (url.protocol === 'amqp:' || url.protocol === 'amqps:') && url.hostname !== '';
  } catch {
    return false;
  }
}, { message: 'must be an amqp:// or amqps:// URL, e.g. amqp://user:pass@host:5672/vhost' });

export const rabbitmqSettings = z.strictObject({
  /** Secret: may carry a user name and password. */
  url: amqpUrl,
  queue: z.string().min(1).max(255),
  prefetch: z.number().int().min(1).max(MAX_BATCH).default(DEFAULT_PREFETCH),
  /** A fixed event type; default the routing key the message was first published with. */
  eventType: z.string().min(1).max(200).optional(),
});

export type RabbitmqSettings = z.infer<typeof rabbitmqSettings>;

export interface RabbitmqBridgeOptions {
  /** The connections to consume on; default a set of the kind's own. */
  connections?: AmqpConnections;
}

export function createRabbitmqBridge(options: RabbitmqBridgeOptions = {}): BridgeKind<RabbitmqSettings> {
  const connections = options.connections ?? createAmqpConnections();
  let openSources = 0;
  const opened = async (s: RabbitmqSettings, ctx: BridgeContext): Promise<BridgeSource> => {
    openSources += 1;
    let isCounted = true;
    const release = async () => {
      if (!isCounted) return;
      isCounted = false;
      if (--openSources === 0) await connections.close();
    };
    try {
      const source = await openSource(connections, s, ctx);
      return { ...source, close: () => source.close().finally(release) };
    } catch (error) {
      await release();
      throw error;
    }
  };
  return {
    kind: 'rabbitmq',
    settings: rabbitmqSettings,
    describe: (s) => {
      const url = new URL(s.url);
      return `rabbitmq queue ${s.queue} on ${url.host} vhost ${vhostOf(url)}`;
    },
    batchSize: (s) => s.prefetch,
    open: opened,
  };
}

function vhostOf(url: URL): string {
  return url.pathname.length > 1 ? decodeURIComponent(url.pathname.slice(1)) : '/';
}

async function openSource(connections: AmqpConnections, s: RabbitmqSettings, ctx: BridgeContext): Promise<BridgeSource> {
  const vhost = vhostOf(new URL(s.url));
  let closing = false;
  const fail = (error: Error) => {
    if (!closing) ctx.failed(error);
  };
  const channel = await connections.openChannel(s.url);
  const arrived: BridgeMessage[] = [];
  // Delivered on this channel and neither acked nor nacked yet, by delivery tag. The channel numbers
  // its deliveries 1, 2, … in the order they arrive, and a Map iterates in insertion order: oldest first.
  const unsettled = new Map<number, ConsumeMessage>();
  let toAck = new Set<number>();
  // The acks of one batch (the runner acks each stored message in one synchronous loop) go out
  // together at the end of the tick: the oldest unsettled deliveries that are all acked take one
  // ack with `multiple` (it settles every outstanding delivery up to its tag on this channel, so it
  // never reaches past a delivery still waiting or in a batch not yet committed); any acked message
  // behind such a delivery is acked alone. A refused message is nacked at once, so it is settled
  // before a `multiple` ack passes over it: the broker dead-letters it, never acks it away.
  const flushAcks = (isClosing = false) => {
    const tags = toAck;
    toAck = new Set();
    if ((closing && !isClosing) || tags.size === 0) return;
    try {
      let upTo: ConsumeMessage | null = null;
      for (const [tag, m] of unsettled) {
        if (!tags.has(tag)) break;
        upTo = m;
        unsettled.delete(tag);
        tags.delete(tag);
      }
      if (upTo) channel.ack(upTo, true);
      for (const tag of tags) {
        const m = unsettled.get(tag);
        if (!m) continue;
        unsettled.delete(tag);
        channel.ack(m);
      }
    } catch (error) {
      // The channel closed after the commit: the broker redelivers these and their dedupe keys store nothing.
      fail(error instanceof Error ? error : new Error(String(error)));
    }
  };
  // checkQueue on a channel of its own: a failed check closes its channel, never the consumer's.
  let lagChannel: Channel | null = null;
  const closeChannels = async () => {
    closing = true;
    // Acks asked for in this tick go out first: those messages are committed (a failure is not reported: the source is closing).
    flushAcks(true);
    arrived.length = 0;
    unsettled.clear();
    toAck.clear();
    // Closing the channel gives every unacked message back to the queue.
    await Promise.all([channel.close().catch(() => {}), lagChannel?.close().catch(() => {})]);
  };
  // Decoded as it arrives, while the runner's previous batch is in the database: off the batch's path.
  const toMessage = (m: ConsumeMessage): BridgeMessage => {
    let decoded: DecodedMessage;
    try {
      decoded = decodeMessage(m, { bridge: ctx.name, vhost, bridgeQueue: s.queue, eventType: s.eventType });
    } catch (error) {
      // Inside amqplib's delivery callback a throw would break the connection, and the message would come back forever.
      const message = `its properties or headers cannot be read: ${error instanceof Error ? error.message : String(error)}`;
      decoded = { record: { eventType: DEFAULT_EVENT_TYPE, payload: null }, asBytes: null, poison: null, refusal: { reason: 'bad_headers', message } };
    }
    const tag = m.fields.deliveryTag;
    return {
      ...decoded,
      ack: () => {
        if (toAck.size === 0) queueMicrotask(() => flushAcks());
        toAck.add(tag);
      },
      refuse: () => {
        unsettled.delete(tag);
        channel.nack(m, false, false);
      },
    };
  };
  channel.on('error', fail);
  channel.on('close', () => fail(new Error('the RabbitMQ channel closed (connection lost or closed by the broker)')));
  try {
    await channel.prefetch(s.prefetch);
    await channel.consume(s.queue, (message) => {
      if (message === null) return fail(new Error(`RabbitMQ cancelled the consumer of queue ${s.queue} (deleted?)`));
      unsettled.set(message.fields.deliveryTag, message);
      arrived.push(toMessage(message));
      ctx.arrived();
    }, { noAck: false });
  } catch (error) {
    await closeChannels();
    throw error;
  }
  return {
    take: (max) => arrived.splice(0, max),
    async lag() {
      if (closing) return null;
      if (!lagChannel) {
        const opened = await connections.openChannel(s.url);
        if (closing) {
          // Closed while this read opened its channel (the runner reads the lag beside its batches).
          await opened.close().catch(() => {});
          return null;
        }
        opened.on('error', () => {});
        opened.on('close', () => {
          if (lagChannel === opened) lagChannel = null;
        });
        lagChannel = opened;
      }
      return (await lagChannel.checkQueue(s.queue)).messageCount;
    },
    close: closeChannels,
  };
}

interface DecodeContext {
  bridge: string;
  vhost: string;
  bridgeQueue: string;
  eventType: string | undefined;
}

/** A consumed message as the dead letter to store (pure: no channel). */
export function decodeMessage(m: ConsumeMessage, c: DecodeContext): DecodedMessage {
  const { headers: rawHeaders, ...properties } = m.properties;
  const headers = toJsonValue(rawHeaders ?? {}) as Record<string, unknown>;
  const deaths = Array.isArray(rawHeaders?.['x-death']) ? (rawHeaders['x-death'] as XDeathEntry[]) : [];
  const latest = deaths[0];
  const oldest = deaths[deaths.length - 1];
  const routingKeys = oldest && Array.isArray(oldest['routing-keys']) ? oldest['routing-keys'].map(String) : [m.fields.routingKey];
  const exchange = oldest ? String(oldest.exchange ?? '') : m.fields.exchange;
  const diedIn = latest ? String(latest.queue ?? c.bridgeQueue) : null;
  const keptProperties = toJsonValue(Object.fromEntries(Object.entries(properties).filter(([, v]) => v !== undefined && v !== null)));
  const contentType = typeof properties.contentType === 'string' ? properties.contentType : null;
  const contentEncoding = typeof properties.contentEncoding === 'string' ? properties.contentEncoding : null;
  const fingerprint = createHash('sha256').update(m.content).update('\0').update(JSON.stringify(keptProperties)).update('\0').update(JSON.stringify(headers)).digest('hex').slice(0, 32);
  const place = `${c.vhost}/${c.bridgeQueue}`;
  const eventType = (c.eventType ?? (routingKeys.find((k) => k !== '') || DEFAULT_EVENT_TYPE)).slice(0, 200);
  const base: Omit<RecordDeadLetterInput, 'payload'> = {
    eventType,
    errorKind: latest?.reason === 'expired' ? 'TIMEOUT' : 'UNKNOWN',
    errorMessage: latest ? describeDeath(latest) : `published to ${c.bridgeQueue} without x-death`,
    queue: (diedIn ?? c.bridgeQueue).slice(0, 200),
    source: typeof properties.appId === 'string' && properties.appId !== '' ? properties.appId.slice(0, 200) : 'rabbitmq',
    headers: { properties: keptProperties, headers },
    occurredAt: latest ? timestampOf(latest.time) : null,
    dedupeKey: `amqp:${place.length > 400 ? createHash('sha256').update(place).digest('hex') : place}:${fingerprint}`,
    origin: { kind: 'amqp', bridge: c.bridge, vhost: c.vhost, queue: diedIn, exchange, routingKeys },
  };
  return decodeBody(base, m.content, contentType, contentEncoding);
}

interface XDeathEntry {
  count?: number;
  reason?: string;
  queue?: string;
  time?: { '!': 'timestamp'; value: number };
  exchange?: string;
  'routing-keys'?: unknown[];
}

function describeDeath(d: XDeathEntry): string {
  const times = typeof d.count === 'number' && d.count > 1 ? ` (${d.count} times)` : '';
  return `${d.reason ?? 'dead-lettered'} in queue ${d.queue ?? '?'}${times}`;
}

function timestampOf(time: XDeathEntry['time']): Date | null {
  return time && typeof time.value === 'number' ? new Date(time.value * 1000) : null;
}

/** AMQP field values as JSON: timestamps as ISO text, byte arrays as { $binary }, decimals as text. */
function toJsonValue(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (Buffer.isBuffer(value)) return { $binary: value.toString('base64') };
  if (Array.isArray(value)) return value.map(toJsonValue);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (typeof value === 'object') {
    const tagged = value as { '!'?: string; value?: unknown };
    if (tagged['!'] === 'timestamp' && typeof tagged.value === 'number') return new Date(tagged.value * 1000).toISOString();
    if (tagged['!'] === 'decimal' && tagged.value && typeof tagged.value === 'object') {
      const { places, digits } = tagged.value as { places: number; digits: number };
      return (digits / 10 ** places).toString();
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJsonValue(v)]));
  }
  return value;
}
