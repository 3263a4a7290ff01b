// NATS JetStream bridge: a durable pull consumer of one stream, each message acked after commit.
// Two modes, chosen by the settings (docs/brokers.md, "NATS JetStream bridge"):
// - advisories (`consumers`): the stream is one that captures the MAX_DELIVERIES and MSG_TERMINATED
//   advisories (`advisoryStream`, LAZARUS_ADVISORIES by default; created when missing). Advisories are
//   core-NATS messages that nobody keeps, so a stream takes them while Lazarus is down or paused, and
//   the bridge reads that stream like any other. For each advisory of a consumer it watches, the
//   original message is fetched by its stream sequence (STREAM.MSG.GET) and stored with the
//   advisory as its failure context; when the stream no longer has it (limits aged it out, a
//   delete, or retention removed it), the advisory alone is stored and says so. Advisories of other consumers are acked and skipped.
// - a dead-letter stream (`stream`, optionally `filterSubject`): each message is a dead letter.
// Lifecycle of a source: open (connection from the shared pool, the advisory stream and the durable
// ensured, consume) → messages (advisories: in arrival order, once their original was fetched) wait
// until taken → acked after commit, or terminated (`+TERM`) when refused: the message stays in its
// stream (limits retention) and is not redelivered → close: stop pulling, nak what was delivered and
// not acked (JetStream redelivers it at once; after a crash it does so after ackWait). A lost
// connection, a deleted consumer or stream, or a failed fetch is reported through ctx.failed; the
// runner opens a new source with backoff.
import { createHash } from 'node:crypto';
import { JetStreamApiCodes, jetstreamManager, type ConsumerMessages, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import { z } from 'zod';
import { MAX_BATCH } from '../../domain/recordInput.ts';
import { createNatsConnections, parseNatsUrl, type NatsConnectionHandle, type NatsConnections } from '../brokers/natsConnections.ts';
import type { BridgeContext, BridgeKind, BridgeMessage, BridgeSource } from './bridgeKind.ts';
import { ensureAdvisoryStream, ensureDurable, isApiError, isSubjectFilter } from './natsStreams.ts';
import { advisoryRecord, deadLetterRecord, parseAdvisory, unknownAdvisoryRecord, type Decoded, type StoredNatsMessage } from './natsRecords.ts';

export const DEFAULT_ADVISORY_STREAM = 'LAZARUS_ADVISORIES';
export const DEFAULT_NATS_BATCH_SIZE = 100;
export const DEFAULT_ACK_WAIT_MS = 30_000;

// Stream and consumer names: no whitespace, dots, wildcards or path separators (the server's rule).
const NAME = /^[^\s.*>/\\]+$/;
const name = (what: string) => z.string().min(1).max(255).regex(NAME, `must be a ${what} name: no whitespace, '.', '*', '>', '/' or '\\'`);

const subjectFilter = z.string().min(1).max(255).refine(isSubjectFilter, { message: "must be a NATS subject; '*' and a last '>' may stand for tokens, e.g. dlq.orders.>" });

export const natsBridgeSettings = z.strictObject({
  /** Secret: may carry a user and password or a token (as the nats target's url). */
  url: z.string().superRefine((value, ctx) => {
    const parsed = parseNatsUrl(value);
    if ('problem' in parsed) ctx.addIssue({ code: 'custom', message: parsed.problem });
  }),
  /** Advisories mode: the JetStream consumers whose given-up and terminated messages come in; no consumer means all of the stream's. */
  consumers: z.array(z.strictObject({ stream: name('stream'), consumer: name('consumer').optional() })).min(1).max(100).optional(),
  /** The stream that captures the advisories; created when missing. */
  advisoryStream: name('stream').optional(),
  /** Dead-letter stream mode: the stream your consumers publish dead letters to. */
  stream: name('stream').optional(),
  filterSubject: subjectFilter.optional(),
  /** The bridge's durable consumer; default `lazarus-<bridge name>`. */
  durable: name('consumer').optional(),
  batchSize: z.number().int().min(1).max(MAX_BATCH).default(DEFAULT_NATS_BATCH_SIZE),
  ackWaitMs: z.number().int().min(1_000).max(86_400_000).default(DEFAULT_ACK_WAIT_MS),
  /** A fixed event type; default the original message's subject. */
  eventType: z.string().min(1).max(200).optional(),
}).superRefine((s, ctx) => {
  if ((s.consumers === undefined) === (s.stream === undefined)) {
    ctx.addIssue({ code: 'custom', path: ['consumers'], message: 'give either consumers (the JetStream consumers whose advisories to take) or stream (a dead-letter stream), not both' });
  }
  if (s.advisoryStream !== undefined && s.consumers === undefined) ctx.addIssue({ code: 'custom', path: ['advisoryStream'], message: 'goes with consumers' });
  if (s.filterSubject !== undefined && s.stream === undefined) ctx.addIssue({ code: 'custom', path: ['filterSubject'], message: 'goes with stream' });
});

export type NatsBridgeSettings = z.infer<typeof natsBridgeSettings>;

export interface NatsBridgeOptions {
  /** The connection pool; default one of the kind's own, whose connections close when no source uses them. */
  connections?: NatsConnections;
}

export function createNatsBridge(options: NatsBridgeOptions = {}): BridgeKind<NatsBridgeSettings> {
  const connections = options.connections ?? createNatsConnections({ name: 'lazarus-bridge' });
  const isOwnPool = !options.connections;
  const users = new Map<string, number>();
  const release = async (url: string) => {
    const left = (users.get(url) ?? 1) - 1;
    if (left > 0) return void users.set(url, left);
    users.delete(url);
    if (isOwnPool) await connections.get(url).close();
  };
  return {
    kind: 'nats',
    settings: natsBridgeSettings,
    describe: (s) => {
      const parsed = parseNatsUrl(s.url);
      const host = 'problem' in parsed ? 'an unparsable URL' : parsed.display;
      if (!s.consumers) return `nats stream ${s.stream}${s.filterSubject ? ` subject ${s.filterSubject}` : ''} on ${host}`;
      const named = s.consumers.map((c) => `${c.stream}/${c.consumer ?? '*'}`);
      const shown = named.length > 3 ? `${named.slice(0, 3).join(', ')} and ${named.length - 3} more` : named.join(', ');
      return `nats advisories of ${shown} on ${host}`;
    },
    batchSize: (s) => s.batchSize,
    open: async (s, ctx) => {
      users.set(s.url, (users.get(s.url) ?? 0) + 1);
      try {
        return await openSource(s, ctx, connections.get(s.url), () => release(s.url));
      } catch (error) {
        await release(s.url);
        throw error;
      }
    },
  };
}

/** The durable's default name: `lazarus-<bridge>`, with a hash when the bridge name had dots. */
export function defaultDurable(bridge: string): string {
  if (!bridge.includes('.')) return `lazarus-${bridge}`;
  return `lazarus-${bridge.replaceAll('.', '_')}-${createHash('sha256').update(bridge).digest('hex').slice(0, 8)}`;
}

async function openSource(s: NatsBridgeSettings, ctx: BridgeContext, handle: NatsConnectionHandle, release: () => Promise<void>): Promise<BridgeSource> {
  const nc = await handle.client();
  const js = await handle.jetstream();
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const advisoryStream = s.advisoryStream ?? DEFAULT_ADVISORY_STREAM;
  const stream = s.stream ?? advisoryStream;
  const durable = s.durable ?? defaultDurable(ctx.name);
  if (s.consumers) await ensureAdvisoryStream(jsm, advisoryStream, s.consumers);
  await ensureDurable(jsm, { stream, durable, bridge: ctx.name, filterSubject: s.filterSubject, ackWaitMs: s.ackWaitMs, maxAckPending: s.batchSize * 4 });
  const consumer = await js.consumers.get(stream, durable);
  const messages: ConsumerMessages = await consumer.consume({ max_messages: s.batchSize });

  let closing = false;
  let broken = false;
  const ready: BridgeMessage[] = [];
  const unacked = new Set<JsMsg>();
  const stopWatching = new AbortController();
  const fail = (error: Error) => {
    if (closing || broken) return;
    broken = true;
    ctx.failed(new Error(handle.scrub(error.message), { cause: error }));
  };
  const context = { bridge: ctx.name, eventType: s.eventType };
  const offer = (m: JsMsg, decoded: Decoded) => {
    if (closing) return;
    ready.push({
      ...decoded,
      ack: () => {
        m.ack();
        unacked.delete(m);
      },
      refuse: () => {
        // +TERM without a reason: servers before 2.11 take `+TERM reason` for no ack at all.
        m.term();
        unacked.delete(m);
      },
    });
    ctx.arrived();
  };
  const watched = (stream: string, consumer: string) =>
    stream !== advisoryStream && s.consumers!.some((c) => c.stream === stream && (c.consumer === undefined || c.consumer === consumer));

  // Advisories one at a time, in order: each waits for its original to be fetched.
  let fetching: Promise<void> = Promise.resolve();
  const onAdvisory = async (m: JsMsg) => {
    if (closing || broken) return;
    const advisory = parseAdvisory(m.data);
    if (!advisory) return offer(m, unknownAdvisoryRecord(storedOf(stream, m), context));
    if (!watched(advisory.stream, advisory.consumer)) {
      m.ack();
      unacked.delete(m);
      return;
    }
    const { original, whyMissing } = await fetchOriginal(jsm, advisory.stream, advisory.streamSeq);
    offer(m, advisoryRecord(advisory, original, whyMissing, context));
  };

  void (async () => {
    for await (const m of messages) {
      if (closing) {
        nakQuietly(m);
        break;
      }
      unacked.add(m);
      if (s.consumers) fetching = fetching.then(() => onAdvisory(m)).catch((error: unknown) => fail(asError(error)));
      else offer(m, deadLetterRecord(storedOf(stream, m), context));
    }
    fail(new Error(`the JetStream consumer ${durable} on stream ${stream} stopped`));
  })().catch((error: unknown) => fail(asError(error)));
  void (async () => {
    for await (const status of messages.status()) {
      if (status.type === 'consumer_deleted' || status.type === 'consumer_not_found' || status.type === 'stream_not_found') {
        fail(new Error(`JetStream: ${status.type.replaceAll('_', ' ')} (consumer ${durable} on stream ${stream})`));
      }
    }
  })().catch(() => {});
  handle.whenState('DISCONNECTED', stopWatching.signal).then(
    () => fail(new Error(handle.health().lastError ?? 'the connection to NATS was lost')),
    () => {},
  );

  return {
    take: (max) => ready.splice(0, max),
    async lag() {
      return (await consumer.info()).num_pending;
    },
    async close() {
      closing = true;
      stopWatching.abort();
      ready.length = 0;
      await messages.close().catch(() => {});
      // A round trip, so the server has dropped this consumer's open pull requests before close
      // returns: a message published after a pause otherwise went to a pull nobody read, and waited
      // out ackWait as "ack pending" before its redelivery.
      await nc.flush().catch(() => {});
      for (const m of unacked) nakQuietly(m);
      unacked.clear();
      await release();
    },
  };
}

function nakQuietly(m: JsMsg): void {
  try {
    m.nak();
  } catch {
    // the connection is gone: JetStream redelivers it after ackWait
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function storedOf(stream: string, m: JsMsg): StoredNatsMessage {
  return { stream, subject: m.subject, seq: m.seq, data: m.data, headers: m.headers, storedAt: m.time };
}

async function fetchOriginal(jsm: JetStreamManager, stream: string, seq: number): Promise<{ original: StoredNatsMessage | null; whyMissing: string }> {
  try {
    const found = await jsm.streams.getMessage(stream, { seq });
    if (found) {
      return { original: { stream, subject: found.subject, seq: found.seq, data: found.data, headers: found.header, storedAt: found.time }, whyMissing: '' };
    }
    return { original: null, whyMissing: `the original message is no longer in stream ${stream} (removed by its retention, limits or a delete)` };
  } catch (error) {
    if (isApiError(error, JetStreamApiCodes.StreamNotFound)) return { original: null, whyMissing: `stream ${stream} no longer exists` };
    throw error;
  }
}
