// What a bridge kind provides: a broker whose dead-letter queue (or stream, or subject) Lazarus
// consumes. A kind is one file in this folder and one line in registry.ts; the runner
// (runBridge.ts) does the rest: batches, one INSERT per batch, ack after commit, poison, pause,
// metrics. Contract (docs/brokers.md, "Bridges in"):
//  - `open` connects and starts receiving; messages wait in the source until `take` hands them over,
//    and the source calls `ctx.arrived()` when some came, so the runner's loop wakes at once.
//  - each message brings the dead letter to store, with a dedupe key built from its source
//    coordinates (so a crash between commit and ack stores it once), and `origin`;
//  - `ack` is called only after the row (or its duplicate) is committed; `refuse` when it cannot be
//    stored at all: the kind sends it to a place the broker shows (RabbitMQ: the queue's own
//    dead-letter exchange) and the runner counts it;
//  - `close` gives back every message taken and not acked (the broker redelivers them).
import type { z } from 'zod';
import type { RecordDeadLetterInput } from '../../domain/recordInput.ts';

export interface BridgeContext {
  /** The bridge's declared name, for `origin.bridge` and logs. */
  name: string;
  /** Messages arrived: wakes the runner. */
  arrived(): void;
  /** The connection broke under the source (the runner closes it and opens a new one at its next pass). */
  failed(error: Error): void;
}

/** Why a stored message is counted as poison; the runner keeps a counter per reason. */
export type PoisonReason = 'not_utf8' | 'not_json' | 'too_large' | 'bad_headers' | 'unstorable';

export interface BridgeMessage {
  /** The dead letter to store: payload, headers, failure context, dedupe key and origin. */
  record: RecordDeadLetterInput;
  /**
   * The same message with its body kept as bytes (`{ "$binary": base64, "contentType": … }`), tried
   * when `record` is refused by validation (a JSON body nested too deep, say); null when the body
   * already is bytes.
   */
  asBytes: (() => RecordDeadLetterInput) | null;
  /** Stored, but counted as poison: a body that claimed JSON and was not UTF-8 or not JSON. */
  poison: PoisonReason | null;
  /** Known unstorable before validation (a body over the payload cap): the runner refuses it. */
  refusal: { reason: PoisonReason; message: string } | null;
  ack(): void;
  /** It cannot be stored: away to where the broker keeps refused messages (RabbitMQ: nack without requeue). */
  refuse(): void;
}

export interface BridgeSource {
  /** Up to `max` messages that have arrived, at once; empty when none has. */
  take(max: number): BridgeMessage[];
  /** Messages waiting at the source (RabbitMQ: the queue's ready count), or null when unknown. */
  lag(): Promise<number | null>;
  /** Stops receiving; messages taken and not acked go back to the broker. */
  close(): Promise<void>;
}

export interface BridgeKind<S = any> {
  /** The name in a declaration's `kind`, e.g. "rabbitmq". */
  kind: string;
  /** A zod schema of the declaration's `settings`; checked at start-up, before anything starts. */
  settings: z.ZodType<S>;
  /** One line for answers, logs and the console: kind, host and place, never a credential. */
  describe(settings: S): string;
  /** The most messages one batch takes (at most MAX_BATCH). */
  batchSize(settings: S): number;
  open(settings: S, ctx: BridgeContext): Promise<BridgeSource>;
}

export type BridgeKinds = ReadonlyMap<string, BridgeKind>;
