// The declared bridges and what each has done in this process: counts, lag, rate, last error. The
// runners write it; GraphQL (`bridges`) and /metrics read it. Counts are this process's since it
// started; the paused flag is the database's (bridge_states), shared by every instance.
import type { BridgeDeclaration } from '../../config.ts';
import type { BridgeKind, BridgeKinds, PoisonReason } from './bridgeKind.ts';

/** A declaration whose kind and settings were checked at start-up. */
export interface Bridge {
  name: string;
  kind: BridgeKind;
  settings: unknown;
  /** The kind's one line: host and place, never a credential. */
  description: string;
}

export class BridgeDeclarationError extends Error {
  override name = 'BridgeDeclarationError';
}

/** Checks each declaration against its kind; throws one line naming the bridge and the field. */
export function resolveBridges(declarations: readonly BridgeDeclaration[], kinds: BridgeKinds): Bridge[] {
  return declarations.map((d) => {
    const kind = kinds.get(d.kind);
    if (!kind) throw new BridgeDeclarationError(`LAZARUS_BRIDGES: bridge "${d.name}": kind "${d.kind}" is not known (known: ${[...kinds.keys()].join(', ')})`);
    const parsed = kind.settings.safeParse(d.settings);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new BridgeDeclarationError(`LAZARUS_BRIDGES: bridge "${d.name}" (${d.kind}): settings.${issue.path.join('.') || '(root)'}: ${issue.message}`);
    }
    return { name: d.name, kind, settings: parsed.data, description: kind.describe(parsed.data) };
  });
}

export type BridgeConnection = 'CONNECTED' | 'CONNECTING' | 'DISCONNECTED' | 'PAUSED';

export interface BridgeStatus {
  readonly name: string;
  readonly kind: string;
  readonly description: string;
  connection: BridgeConnection;
  /** Messages taken from the broker (a redelivered one counts again). */
  received: number;
  /** Dead letters stored. */
  recorded: number;
  /** Messages whose dedupe key was already stored (a redelivery): acked, nothing stored. */
  duplicates: number;
  /** Poison messages, stored as bytes or refused, by reason. */
  poison: Partial<Record<PoisonReason, number>>;
  /** Messages refused to the broker (never stored). */
  refused: number;
  /** Messages waiting at the source when last asked, or null. */
  lag: number | null;
  lastError: string | null;
  lastErrorAt: Date | null;
  /** Dead letters stored per second over the last minute. */
  ratePerSecond(now?: number): number;
  countRecorded(n: number, now?: number): void;
}

export interface BridgeBoard {
  list(): BridgeStatus[];
  get(name: string): BridgeStatus | undefined;
  /** Wakes the bridge's runner now (after a pause or resume). */
  poke(name: string): void;
  /** The runner's poke handler; returns the unsubscribe. */
  onPoke(name: string, fn: () => void): () => void;
}

const RATE_WINDOW_SECONDS = 60;

export function createBridgeBoard(bridges: readonly Bridge[]): BridgeBoard {
  const statuses = new Map(bridges.map((b) => [b.name, createStatus(b)]));
  const pokes = new Map<string, () => void>();
  return {
    list: () => [...statuses.values()],
    get: (name) => statuses.get(name),
    poke: (name) => pokes.get(name)?.(),
    onPoke(name, fn) {
      pokes.set(name, fn);
      return () => {
        if (pokes.get(name) === fn) pokes.delete(name);
      };
    },
  };
}

function createStatus(b: Bridge): BridgeStatus {
  // One bucket per second over the window: [second, count].
  const buckets: [number, number][] = [];
  const since = Math.floor(Date.now() / 1000);
  return {
    name: b.name,
    kind: b.kind.kind,
    description: b.description,
    connection: 'CONNECTING',
    received: 0,
    recorded: 0,
    duplicates: 0,
    poison: {},
    refused: 0,
    lag: null,
    lastError: null,
    lastErrorAt: null,
    countRecorded(n, now = Date.now()) {
      this.recorded += n;
      const second = Math.floor(now / 1000);
      const last = buckets[buckets.length - 1];
      if (last && last[0] === second) last[1] += n;
      else buckets.push([second, n]);
      while (buckets.length > 0 && buckets[0]![0] <= second - RATE_WINDOW_SECONDS) buckets.shift();
    },
    ratePerSecond(now = Date.now()) {
      const second = Math.floor(now / 1000);
      const total = buckets.filter(([s]) => s > second - RATE_WINDOW_SECONDS).reduce((sum, [, n]) => sum + n, 0);
      return total / Math.max(1, Math.min(RATE_WINDOW_SECONDS, second - since + 1));
    },
  };
}
