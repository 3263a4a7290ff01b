// The bridges on /metrics, read from the board at scrape time. Labels: the bridge's declared name
// and kind (operators choose both: a handful of series, never a credential).
import { Counter, Gauge, type Registry } from 'prom-client';
import type { BridgeBoard, BridgeStatus } from './bridgeBoard.ts';

const OUTCOMES = {
  received: (s: BridgeStatus) => s.received,
  recorded: (s: BridgeStatus) => s.recorded,
  duplicate: (s: BridgeStatus) => s.duplicates,
  refused: (s: BridgeStatus) => s.refused,
} as const;

export function registerBridgeMetrics(registry: Registry, board: BridgeBoard): void {
  if (board.list().length === 0) return;
  new Counter({
    name: 'lazarus_bridge_messages_total',
    help: 'Messages a bridge took from its broker, by outcome: received, recorded (stored), duplicate (already stored: a redelivery), refused (sent back to the broker unstored).',
    labelNames: ['bridge', 'kind', 'outcome'], registers: [registry],
    collect() {
      this.reset();
      for (const s of board.list()) {
        for (const [outcome, read] of Object.entries(OUTCOMES)) this.inc({ bridge: s.name, kind: s.kind, outcome }, read(s));
      }
    },
  });
  new Counter({
    name: 'lazarus_bridge_poison_total',
    help: 'Poison messages (a body that claimed JSON and was not, over the size cap, unstorable headers), stored as bytes or refused, by reason.',
    labelNames: ['bridge', 'kind', 'reason'], registers: [registry],
    collect() {
      this.reset();
      for (const s of board.list()) {
        for (const [reason, n] of Object.entries(s.poison)) this.inc({ bridge: s.name, kind: s.kind, reason }, n ?? 0);
      }
    },
  });
  const gauge = (name: string, help: string, read: (s: BridgeStatus) => number | null) => new Gauge({
    name, help, labelNames: ['bridge', 'kind'], registers: [registry],
    collect() {
      this.reset();
      for (const s of board.list()) {
        const value = read(s);
        if (value !== null) this.set({ bridge: s.name, kind: s.kind }, value);
      }
    },
  });
  gauge('lazarus_bridge_lag', 'Messages waiting at the bridge\'s source (RabbitMQ: the queue\'s ready messages) when last asked.', (s) => s.lag);
  gauge('lazarus_bridge_paused', '1 while an operator has paused the bridge (pauseBridge), else 0.', (s) => (s.connection === 'PAUSED' ? 1 : 0));
  gauge('lazarus_bridge_connected', '1 while the bridge is connected to its broker, else 0.', (s) => (s.connection === 'CONNECTED' ? 1 : 0));
  gauge('lazarus_bridge_records_per_second', 'Dead letters the bridge stored per second over the last minute.', (s) => s.ratePerSecond());
  gauge('lazarus_bridge_last_error_timestamp_seconds', 'When the bridge last failed (broker trouble or a refused message), Unix seconds.', (s) => (s.lastErrorAt ? s.lastErrorAt.getTime() / 1000 : null));
}
