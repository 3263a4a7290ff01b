// Redis Streams bridge: reads a stream key through a consumer group, each entry one dead letter
// (redisEntry.ts decodes it). Connections come from the shared pool (brokers/redisConnections.ts),
// two per bridge: `bridge-read <name>` for the blocking XREADGROUP and XAUTOCLAIM, `bridge <name>`
// for XACK, refusals and XINFO, so a blocked read never holds up an ack (Redis answers a connection's
// commands in order).
// Lifecycle of a source:
//   open: connect both, XGROUP CREATE … MKSTREAM (from `0` or `$`; an existing group is kept)
//   → re-read this consumer's pending entries (XREADGROUP … 0: delivered before, never acked)
//   → claim the group's entries idle past claimIdleMs (XAUTOCLAIM: a dead consumer's), again each
//     claimIdleMs → read new entries (XREADGROUP … BLOCK … >), one batch ahead of what was taken.
//   Taken entries are XACKed after the commit (acks of one pass go in one XACK); a refused one is
//   copied to the refused stream and XACKed in one MULTI. close() waits for acks in flight, then
//   disconnects and waits for Redis to close the blocked read's connection (so nothing is delivered
//   after close); what was read and not acked stays pending in the group, for the next open to re-read. Any failed command is reported through ctx.failed; the
//   runner closes the source and opens a new one with backoff.
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { MAX_BATCH } from '../../domain/recordInput.ts';
import { createRedisConnections, parseRedisUrl, type RedisConnections } from '../brokers/redisConnections.ts';
import type { BridgeContext, BridgeKind, BridgeMessage, BridgeSource } from './bridgeKind.ts';
import { decodeEntry, type EntryMapping } from './redisEntry.ts';

export const DEFAULT_REDIS_BATCH_SIZE = 100;
export const DEFAULT_CLAIM_IDLE_MS = 60_000;
const MAX_BLOCK_MS = 5_000;
const CLOSE_WAIT_MS = 5_000;

const redisUrl = z.string().superRefine((value, ctx) => {
  const server = parseRedisUrl(value);
  if ('problem' in server) ctx.addIssue({ code: 'custom', message: server.problem });
});
const fieldName = z.string().min(1).max(200);

export const redisBridgeSettings = z.strictObject({
  /** Secret: may carry a user name and password. */
  url: redisUrl,
  stream: z.string().min(1).max(1024),
  group: z.string().min(1).max(200).default('lazarus'),
  /** Where a group created by the bridge starts: `0` (the entries already there) or `$` (new ones only). */
  groupStart: z.enum(['0', '$']).default('0'),
  /** This instance's consumer name; default host:pid. A stable name re-reads its own pending entries at once after a restart. */
  consumer: z.string().min(1).max(200).optional(),
  batchSize: z.number().int().min(1).max(MAX_BATCH).default(DEFAULT_REDIS_BATCH_SIZE),
  /** Entries pending this long with another consumer (a dead one) are claimed. */
  claimIdleMs: z.number().int().min(1_000).max(7 * 86_400_000).default(DEFAULT_CLAIM_IDLE_MS),
  /** Where refused entries go; default `<stream>:refused`. */
  refusedStream: z.string().min(1).max(1024).optional(),
  /** The field holding the payload; null (or an entry without it) stores the whole entry as an object. */
  payloadField: fieldName.nullable().default('payload'),
  /** A fixed event type; default the eventTypeField's value, else `redis.entry`. */
  eventType: z.string().min(1).max(200).optional(),
  eventTypeField: fieldName.default('event-type'),
  errorField: fieldName.default('error'),
  errorKindField: fieldName.default('error-kind'),
  queueField: fieldName.default('queue'),
  sourceField: fieldName.default('source'),
  /** The field naming the stream the entry was first read from: where a redrive to source sends it. */
  sourceStreamField: fieldName.default('source-stream'),
});

export type RedisBridgeSettings = z.infer<typeof redisBridgeSettings>;

export interface RedisBridgeOptions {
  /** The connection pool; default a pool of the kind's own. */
  connections?: RedisConnections;
}

export function createRedisBridge(options: RedisBridgeOptions = {}): BridgeKind<RedisBridgeSettings> {
  const connections = options.connections ?? createRedisConnections();
  return {
    kind: 'redis',
    settings: redisBridgeSettings,
    describe: (s) => {
      const server = parseRedisUrl(s.url);
      return `redis stream ${s.stream} group ${s.group} on ${'problem' in server ? 'an unparsable URL' : server.display}`;
    },
    batchSize: (s) => s.batchSize,
    open: (s, ctx) => openSource(connections, s, ctx),
  };
}

interface RawEntry {
  id: string;
  fields: Buffer[] | null;
}

async function openSource(connections: RedisConnections, s: RedisBridgeSettings, ctx: BridgeContext): Promise<BridgeSource> {
  const consumer = s.consumer ?? `${hostname()}:${process.pid}`;
  const refusedStream = s.refusedStream ?? `${s.stream}:refused`;
  const blockMs = Math.min(MAX_BLOCK_MS, s.claimIdleMs);
  const commands = connections.get(s.url, `bridge ${ctx.name}`);
  const reads = connections.get(s.url, `bridge-read ${ctx.name}`);
  const scrubbed = (error: unknown) => new Error(commands.scrub(error instanceof Error ? error.message : String(error)), { cause: error });
  let redis: Redis;
  let reader: Redis;
  try {
    redis = await commands.client();
    reader = await reads.client();
    await redis.xgroup('CREATE', s.stream, s.group, s.groupStart, 'MKSTREAM').catch((error: unknown) => {
      if (!(error instanceof Error && error.message.startsWith('BUSYGROUP'))) throw error;
    });
  } catch (error) {
    await Promise.all([commands.close(), reads.close()]);
    throw scrubbed(error);
  }
  const mapping: EntryMapping = {
    bridge: ctx.name, stream: s.stream, group: s.group, payloadField: s.payloadField, eventType: s.eventType,
    eventTypeField: s.eventTypeField, errorField: s.errorField, errorKindField: s.errorKindField,
    queueField: s.queueField, sourceField: s.sourceField, sourceStreamField: s.sourceStreamField,
  };

  let closing = false;
  const arrived: RawEntry[] = [];
  /** Ids read and not yet acked or refused: a claim skips them. */
  const held = new Set<string>();
  let roomFor: (() => void) | null = null;
  const room = () => new Promise<void>((resolve) => {
    if (closing || arrived.length === 0) resolve();
    else roomFor = resolve;
  });
  const makeRoom = () => {
    roomFor?.();
    roomFor = null;
  };
  const push = (entries: readonly RawEntry[]) => {
    if (closing) return;
    for (const e of entries) {
      if (e.fields === null || held.has(e.id)) continue;
      held.add(e.id);
      arrived.push(e);
    }
    if (arrived.length > 0) ctx.arrived();
  };
  const fail = (error: unknown) => {
    if (!closing) ctx.failed(scrubbed(error));
  };

  const inflight = new Set<Promise<void>>();
  const track = (command: Promise<unknown>, ids: readonly string[]) => {
    const settled: Promise<void> = command.then(() => {}, fail).finally(() => {
      for (const id of ids) held.delete(id);
      inflight.delete(settled);
    });
    inflight.add(settled);
  };
  let toAck: string[] = [];
  const flushAcks = () => {
    const ids = toAck;
    toAck = [];
    if (ids.length > 0) track(redis.xack(s.stream, s.group, ...ids), ids);
  };
  const ack = (id: string) => {
    if (toAck.length === 0) queueMicrotask(flushAcks);
    toAck.push(id);
  };
  const refuse = (e: RawEntry) => {
    const copy = redis.multi()
      .xadd(refusedStream, '*', ...e.fields!, 'lazarus-refused-from', `${s.stream} ${e.id}`)
      .xack(s.stream, s.group, e.id)
      .exec()
      .then((replies) => {
        const error = replies === null ? new Error('the refusal transaction was aborted') : replies.find(([err]) => err)?.[0];
        if (error) throw error;
      });
    track(copy, [e.id]);
  };

  const readGroup = async (after: string, isBlocking: boolean): Promise<RawEntry[]> => {
    const block = isBlocking ? ['BLOCK', blockMs] : [];
    // Lower case: ioredis gives a RESP3 map reply the RESP2 shape only for its own command names.
    const reply = await reader.callBuffer('xreadgroup', 'GROUP', s.group, consumer, 'COUNT', s.batchSize, ...block, 'STREAMS', s.stream, after);
    return entriesOf((reply as [Buffer, [Buffer, Buffer[] | null][]][] | null)?.[0]?.[1]);
  };
  let claimedAt = -Infinity;
  const claimIdle = async () => {
    let cursor = '0-0';
    do {
      await room();
      if (closing) return;
      const [next, entries] = await reader.callBuffer('XAUTOCLAIM', s.stream, s.group, consumer, s.claimIdleMs, cursor, 'COUNT', s.batchSize) as [Buffer, [Buffer, Buffer[] | null][]];
      cursor = next.toString();
      push(entriesOf(entries));
    } while (cursor !== '0-0');
    claimedAt = Date.now();
  };
  const readLoop = async () => {
    // This consumer's own pending entries first: read before (by a source that closed, or a process
    // with the same consumer name that crashed) and never acked.
    for (let after = '0'; ;) {
      await room();
      if (closing) return;
      const entries = await readGroup(after, false);
      if (entries.length === 0) break;
      after = entries[entries.length - 1]!.id;
      // Deleted from the stream (XDEL, MAXLEN) while pending: nothing left to store.
      const gone = entries.filter((e) => e.fields === null).map((e) => e.id);
      if (gone.length > 0) await redis.xack(s.stream, s.group, ...gone);
      push(entries);
    }
    while (!closing) {
      await room();
      if (closing) return;
      if (Date.now() - claimedAt >= s.claimIdleMs) await claimIdle();
      push(await readGroup('>', true));
    }
  };
  const reading = readLoop().catch(fail);

  const toMessage = (e: RawEntry): BridgeMessage => ({
    ...decodeEntry(e.id, e.fields!, mapping),
    ack: () => ack(e.id),
    refuse: () => refuse(e),
  });
  return {
    take(max) {
      const batch = arrived.splice(0, max);
      if (arrived.length === 0) makeRoom();
      return batch.map(toMessage);
    },
    async lag() {
      const groups = await redis.call('XINFO', 'GROUPS', s.stream) as unknown[][];
      const group = groups.map(fieldsToObject).find((g) => g.name === s.group);
      if (!group) return null;
      return lagOf(group, group.lag === null || group.lag === undefined ? await redis.xlen(s.stream) : null);
    },
    async close() {
      closing = true;
      arrived.length = 0;
      makeRoom();
      flushAcks();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, CLOSE_WAIT_MS).unref();
      });
      await Promise.race([Promise.allSettled([...inflight]), timeout]);
      clearTimeout(timer);
      held.clear();
      await Promise.all([reads.close(), commands.close()]);
      // The blocked read ends when Redis has closed the connection: from then on no entry can be
      // delivered to it (one delivered before stays pending for the next open).
      await reading;
    },
  };
}

function entriesOf(items: [Buffer, Buffer[] | null][] | null | undefined): RawEntry[] {
  return (items ?? []).map(([id, fields]) => ({ id: id.toString(), fields }));
}

function fieldsToObject(flat: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = flat[i + 1];
  return out;
}

/**
 * Entries of the stream not yet delivered to the group: XINFO GROUPS' `lag` (Redis ≥ 7), else the
 * stream's length less the group's `entries-read` (an estimate: deleted entries count), else null.
 */
export function lagOf(group: { lag?: unknown; 'entries-read'?: unknown }, length: number | null): number | null {
  if (typeof group.lag === 'number') return group.lag;
  const read = group['entries-read'];
  if (typeof read === 'number' && length !== null) return Math.max(0, length - read);
  return null;
}
