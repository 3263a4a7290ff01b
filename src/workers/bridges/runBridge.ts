// One bridge's runner, on the work-loop shape (runtime/workLoop.ts). A pass:
//   paused? (bridge_states, re-read every second or when poked: pauseState.ts) → close the source,
//   take nothing;
//   no source? → open one (after a failure, no sooner than the backoff allows);
//   take the messages that arrived (at most the kind's batch size) → validate each one alone: a
//   valid one is stored, an invalid one is tried again as bytes, and refused only if that fails too
//   → store the batch in one statement (ON CONFLICT (dedupe_key) DO NOTHING) → ack each stored or
//   duplicate message after the commit (the kind may send a batch's acks together) → count.
// The lag is read beside the batches too, every 2 s. A message arriving wakes the loop; a full
// batch is followed by the next pass at once.
// Failures: a broker failure (connect, a broken connection, a cancelled consumer) closes the
// source, becomes the bridge's lastError and is retried with backoff (1 s doubling to 30 s). A
// database failure fails the pass (the outage log reports it) and closes the source too, so the
// messages taken and not acked go back to the broker; the next pass takes them again.
// Events: the loop's `passCompleted` (a BridgePassSummary) and `passFailed`; `sourceFailed` (error)
// as soon as the broker side breaks under an open source.
import type { EventEmitter } from 'node:events';
import type { Db } from '../../db/createDb.ts';
import type { OutageLog } from '../../db/outageLog.ts';
import { ValidationError } from '../../domain/errors.ts';
import { describeCheckViolation } from '../../db/errors.ts';
import { storeValidRecords, type RecordOutcome } from '../../domain/recordDeadLetters.ts';
import { MAX_BATCH, validateRecordInput, type RecordRules, type ValidRecord } from '../../domain/recordInput.ts';
import type { Logger } from '../../logger.ts';
import { startWorkLoop } from '../../runtime/workLoop.ts';
import type { Bridge, BridgeBoard, BridgeStatus } from './bridgeBoard.ts';
import type { BridgeMessage, BridgeSource, PoisonReason } from './bridgeKind.ts';
import { createPauseState } from './pauseState.ts';

export const DEFAULT_BRIDGE_POLL_INTERVAL_MS = 1_000;
const PAUSE_REFRESH_MS = 1_000;
const LAG_REFRESH_MS = 2_000;
const MAX_BACKOFF_MS = 30_000;

export interface BridgePassSummary {
  claimed: number;
  recorded: number;
  duplicates: number;
  /** Stored as bytes or refused, as poison. */
  poison: number;
  refused: number;
  paused: boolean;
}

export interface BridgeRunnerDeps {
  bridge: Bridge;
  board: BridgeBoard;
  db: Db;
  logger: Logger;
  outage: OutageLog;
  rules: RecordRules;
  pollIntervalMs?: number;
  shutdownTimeoutMs?: number;
}

export interface RunningBridge {
  readonly events: EventEmitter;
  stop(): Promise<void>;
}

export function startBridge(d: BridgeRunnerDeps): RunningBridge {
  const { bridge, db } = d;
  const status = d.board.get(bridge.name)!;
  const batchSize = Math.min(MAX_BATCH, bridge.kind.batchSize(bridge.settings));
  const actor = `bridge:${bridge.name}`;
  const secrets = secretsOf(bridge.settings);
  let source: BridgeSource | null = null;
  let broken: Error | null = null;
  let failures = 0;
  let openAfter = 0;
  const pause = createPauseState(db, bridge.name, PAUSE_REFRESH_MS);
  let paused = false;
  let lagReadAt = -Infinity;
  /** The source whose lag is being read, if any. */
  let lagReading: BridgeSource | null = null;
  let wakeLoop: () => void = () => {};

  const noteError = (error: unknown, at = new Date()) => {
    const text = redact(error instanceof Error ? error.message : String(error), secrets);
    if (text !== status.lastError) d.logger.warn({ bridge: bridge.name, target: bridge.description, err: text }, 'bridge: broker trouble; retrying with backoff');
    status.lastError = text;
    status.lastErrorAt = at;
  };
  const closeSource = async () => {
    const s = source;
    source = null;
    broken = null;
    if (s) await s.close().catch(() => {});
  };
  const brokerFailed = async (error: unknown) => {
    noteError(error);
    await closeSource();
    failures += 1;
    openAfter = Date.now() + Math.min(MAX_BACKOFF_MS, 1_000 * 2 ** (failures - 1));
    status.connection = 'DISCONNECTED';
  };

  const idle = (claimed = 0): BridgePassSummary => ({ claimed, recorded: 0, duplicates: 0, poison: 0, refused: 0, paused });

  const runPass = async (): Promise<BridgePassSummary> => {
    paused = await pause.read();
    if (paused) {
      await closeSource();
      status.connection = 'PAUSED';
      return idle();
    }
    if (broken) await brokerFailed(broken);
    if (!source) {
      if (Date.now() < openAfter) return idle();
      status.connection = 'CONNECTING';
      try {
        source = await bridge.kind.open(bridge.settings, {
          name: bridge.name,
          arrived: () => wakeLoop(),
          failed: (error) => {
            broken ??= error;
            loop.events.emit('sourceFailed', error);
            wakeLoop();
          },
        });
      } catch (error) {
        await brokerFailed(error);
        return idle();
      }
      failures = 0;
      status.connection = 'CONNECTED';
    }
    const messages = source.take(batchSize);
    if (messages.length === 0) {
      readLag(status);
      return idle();
    }
    status.received += messages.length;
    try {
      return await storeBatch(messages);
    } catch (error) {
      // Nothing acked: the broker redelivers what this source took once it is closed.
      await closeSource();
      throw error;
    }
  };

  /**
   * Reads the lag beside the batches, at most every LAG_REFRESH_MS and one read per source at a time.
   * Never awaited: a read that a closing source leaves hanging holds up neither a batch nor stop().
   */
  const readLag = (s: BridgeStatus) => {
    const from = source;
    if (!from || lagReading === from || Date.now() - lagReadAt < LAG_REFRESH_MS) return;
    lagReadAt = Date.now();
    lagReading = from;
    void from.lag().then((lag) => {
      if (source === from) s.lag = lag;
    }, (error: unknown) => {
      // A source closed meanwhile fails its read: that is no broker trouble.
      if (source === from) noteError(error);
    }).finally(() => {
      if (lagReading === from) lagReading = null;
    });
  };

  const storeBatch = async (messages: BridgeMessage[]): Promise<BridgePassSummary> => {
    const rows: ValidRecord[] = [];
    const stored: BridgeMessage[] = [];
    let poison = 0;
    let refused = 0;
    const countPoison = (reason: PoisonReason) => {
      poison += 1;
      status.poison[reason] = (status.poison[reason] ?? 0) + 1;
    };
    for (const m of messages) {
      const row = m.refusal ? null : validOrBytes(m, d.rules);
      if (row && 'row' in row) {
        rows.push(row.row);
        stored.push(m);
        const reason = m.poison ?? row.poison;
        if (reason) countPoison(reason);
        continue;
      }
      const why = m.refusal ?? row!.refusal;
      countPoison(why.reason);
      refused += 1;
      noteError(new Error(`refused a message: ${why.message}`));
      m.refuse();
    }
    const outcomes = await storeValidRecords(db, actor, rows).catch(async (error: unknown) => {
      // A row the database refuses (its jsonb text over a size CHECK that the JSON text was under)
      // must not refuse its batch forever: store one by one, and refuse the ones it refuses.
      if (!describeCheckViolation(error)) throw error;
      const one: RecordOutcome[] = [];
      for (let i = 0; i < rows.length; i++) {
        try {
          one.push(...await storeValidRecords(db, actor, [rows[i]!]));
        } catch (rowError) {
          const check = describeCheckViolation(rowError);
          if (!check) throw rowError;
          countPoison('unstorable');
          refused += 1;
          noteError(new Error(`refused a message: ${check.field}: ${check.message}`));
          stored[i]!.refuse();
          stored[i] = null!;
        }
      }
      stored.splice(0, stored.length, ...stored.filter(Boolean));
      return one;
    });
    d.outage.answered();
    for (const m of stored) {
      try {
        m.ack();
      } catch (error) {
        // The channel closed after the commit: the broker redelivers it and its dedupe key stores nothing.
        broken ??= error instanceof Error ? error : new Error(String(error));
      }
    }
    const recorded = outcomes.filter((o) => o.created).length;
    status.countRecorded(recorded);
    status.duplicates += outcomes.length - recorded;
    status.refused += refused;
    readLag(status);
    return { claimed: messages.length, recorded, duplicates: outcomes.length - recorded, poison, refused, paused: false };
  };

  const loop = startWorkLoop<BridgePassSummary>({
    name: `bridge ${bridge.name}`,
    runPass,
    batchSize,
    pollIntervalMs: d.pollIntervalMs ?? DEFAULT_BRIDGE_POLL_INTERVAL_MS,
    shutdownTimeoutMs: d.shutdownTimeoutMs ?? 10_000,
    report: d.outage,
    wake: (fn) => {
      wakeLoop = fn;
      return () => {
        wakeLoop = () => {};
      };
    },
  });
  const unsubscribe = d.board.onPoke(bridge.name, () => {
    pause.poke();
    loop.poke();
  });
  return {
    events: loop.events,
    async stop() {
      unsubscribe();
      await loop.stop();
      await pause.settled();
      await closeSource();
    },
  };
}

type Validated = { row: ValidRecord; poison: PoisonReason | null } | { refusal: { reason: PoisonReason; message: string } };

/** The message's record if it validates, else its bytes form (counted as poison), else why neither can be stored. */
function validOrBytes(m: BridgeMessage, rules: RecordRules): Validated {
  let first: ValidationError;
  try {
    return { row: validateRecordInput(m.record, rules), poison: null };
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    first = error;
  }
  if (m.asBytes && first.field === 'payload') {
    try {
      return { row: validateRecordInput(m.asBytes(), rules), poison: 'unstorable' };
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      first = error;
    }
  }
  const reason: PoisonReason = first.field === 'headers' ? 'bad_headers' : first.field === 'payload' && /bytes/.test(first.message) ? 'too_large' : 'unstorable';
  return { refusal: { reason, message: first.message } };
}

/** Strings of the settings that must never be shown: URL passwords, and whole URLs that carry one. */
function secretsOf(settings: unknown): string[] {
  const found: string[] = [];
  for (const value of Object.values((settings ?? {}) as Record<string, unknown>)) {
    if (typeof value !== 'string') continue;
    try {
      const url = new URL(value);
      if (url.password) found.push(value, url.password, decodeURIComponent(url.password));
    } catch {
      // not a URL
    }
  }
  return found.filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
}

function redact(text: string, secrets: readonly string[]): string {
  return secrets.reduce((t, secret) => t.split(secret).join('***'), text);
}
