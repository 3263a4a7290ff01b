// bench:ingest part 3: what the schema costs a producer that writes plain SQL. The same 500-row
// multi-row INSERT (the text and values part 1's pg side sends) goes, statement by statement in
// turn, into each target: dead_letters with every trigger and index, and a bare table of the same
// columns (`LIKE dead_letters INCLUDING DEFAULTS` plus a primary key on id: no other index, no
// trigger, no CHECK). A third target, dead_letters in a second database migrated only to the
// migrations before BEFORE_MIGRATION, shows what that migration bought, in the same run. Each
// target has its own connection; the order of the targets rotates every statement, so load from
// elsewhere on the machine hits them alike. Beside the wall clock, each target's backend CPU
// (/proc/<pid>/stat) leaves out the commit's fsync and the other processes. Two row shapes: the
// part 1 event (≈ 2.9 KB, no stack) and the same with a ≈ 1.5 KB, 20-frame Node stack.
import { cpuMsOf, timed } from './triggerCost.ts';
import type pg from 'pg';

export const BARE_TABLE = 'bench_bare_dead_letters';
const BATCH = 500;

export interface PlainInsertTarget {
  name: string;
  client: pg.Client;
  table: string;
}

export type RowShape = 'event' | 'stack';

export interface PlainInsertTotals {
  shape: RowShape;
  rows: number;
  /** Per target: wall-clock ms and backend CPU ms (null when /proc cannot tell), summed over statements. */
  targets: Record<string, { wallMs: number; cpuMs: number | null; roundWallMs: number[] }>;
}

export async function createBareTable(client: pg.Client): Promise<void> {
  await client.query(`drop table if exists ${BARE_TABLE}`);
  await client.query(`create table ${BARE_TABLE} (like dead_letters including defaults, primary key (id))`);
}

/** A Node stack of 20 frames, ≈ 1.5 KB; its first line repeats the message, as V8's do. */
export function nodeStack(i: number): string {
  const runner = (fn: string, line: number) => `    at async ${fn} (/app/node_modules/kafkajs/src/consumer/runner.js:${line}:13)`;
  return [
    `Error: HTTP 503 from inventory-service (request ${i})`,
    `    at InventoryClient.reserve (/app/src/clients/inventory.ts:${80 + (i % 40)}:11)`,
    `    at async ${['placeOrder', 'shipOrder', 'captureOrder'][i % 3]} (/app/src/orders/handlers.ts:${100 + (i % 7)}:5)`,
    `    at async Promise.all (index ${i % 4})`,
    '    at async consume (/app/src/kafka/consumer.ts:57:9)',
    runner('Runner.processEachMessage', 231), runner('onBatch', 447), runner('Runner.handleBatch', 461),
    '    at async /app/node_modules/kafkajs/src/consumer/runner.js:584:13',
    runner('Runner.fetch', 600), runner('Runner.scheduleFetch', 620), runner('Runner.start', 640),
    '    at async ConsumerGroup.join (/app/node_modules/kafkajs/src/consumer/consumerGroup.js:141:5)',
    '    at async ConsumerGroup.sync (/app/node_modules/kafkajs/src/consumer/consumerGroup.js:181:5)',
    '    at async Retrier.run (/app/node_modules/kafkajs/src/retry/index.js:43:18)',
    '    at async Cluster.refreshMetadata (/app/node_modules/kafkajs/src/cluster/index.js:209:7)',
    '    at async Broker.connect (/app/node_modules/kafkajs/src/broker/index.js:110:7)',
    '    at async Connection.send (/app/node_modules/kafkajs/src/network/connection.js:380:12)',
    '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
  ].join('\n');
}

function insertStatement(table: string, shape: RowShape, start: number, run: string): { text: string; values: unknown[] } {
  const filler = 'x'.repeat(2_600);
  const values: unknown[] = [];
  const tuples: string[] = [];
  for (let i = start; i < start + BATCH; i++) {
    const b = values.length;
    values.push('order.placed', 'orders', 'checkout', `${run}-${i}`,
      JSON.stringify({ orderId: i, customer: `c-${i % 977}`, lines: [{ sku: `SKU-${i % 101}`, qty: 1 + (i % 5) }], note: filler }),
      JSON.stringify({ topic: 'orders', partition: i % 12, offset: i }), 'DOWNSTREAM_API', `HTTP 503 from inventory-service (request ${i})`,
      shape === 'stack' ? nodeStack(i) : null);
    tuples.push(`($${b + 1},$${b + 2},$${b + 3},$${b + 4},$${b + 5}::jsonb,$${b + 6}::jsonb,$${b + 7}::"ErrorKind",$${b + 8},$${b + 9})`);
  }
  return {
    text: `insert into ${table} (event_type, queue, source, dedupe_key, payload, headers, error_kind, error_message, error_stack) values ${tuples.join(',')}`,
    values,
  };
}

/** `statements` 500-row INSERTs per target and round, targets in a rotating order statement by statement. */
export async function measurePlainInsertCost(o: { targets: PlainInsertTarget[]; shape: RowShape; rounds: number; statements: number }): Promise<PlainInsertTotals> {
  const pids = await Promise.all(o.targets.map(async (t) => (await t.client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid));
  const hasCpu = (await cpuMsOf(pids[0]!)) !== null;
  const totals: PlainInsertTotals = { shape: o.shape, rows: o.rounds * o.statements * BATCH, targets: {} };
  for (const t of o.targets) totals.targets[t.name] = { wallMs: 0, cpuMs: hasCpu ? 0 : null, roundWallMs: [] };
  let next = 0;
  for (let round = 0; round < o.rounds; round++) {
    const roundMs = o.targets.map(() => 0);
    for (let s = 0; s < o.statements; s++, next += BATCH) {
      for (let k = 0; k < o.targets.length; k++) {
        const index = (k + s + round) % o.targets.length;
        const target = o.targets[index]!;
        const total = totals.targets[target.name]!;
        const { text, values } = insertStatement(target.table, o.shape, next, `${o.shape}${round}`);
        const cpuBefore = hasCpu ? await cpuMsOf(pids[index]!) : null;
        const ms = await timed(() => target.client.query(text, values));
        if (cpuBefore !== null && total.cpuMs !== null) total.cpuMs += ((await cpuMsOf(pids[index]!)) ?? cpuBefore) - cpuBefore;
        total.wallMs += ms;
        roundMs[index]! += ms;
      }
    }
    o.targets.forEach((t, k) => totals.targets[t.name]!.roundWallMs.push(roundMs[k]!));
  }
  return totals;
}

/** Each target against `base`: pooled wall and CPU ratios, and the median of the rounds' wall ratios. */
export function summarizePlainInsertCost(totals: PlainInsertTotals, base: string) {
  const b = totals.targets[base]!;
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  return Object.fromEntries(Object.entries(totals.targets).map(([name, t]) => [name, {
    wallMs: Math.round(t.wallMs), cpuMs: t.cpuMs, rowsPerSec: Math.round(totals.rows / (t.wallMs / 1000)),
    wallOverBase: Number((t.wallMs / b.wallMs).toFixed(2)),
    medianRoundWallOverBase: Number(median(t.roundWallMs.map((ms, r) => ms / b.roundWallMs[r]!)).toFixed(2)),
    cpuOverBase: t.cpuMs !== null && b.cpuMs ? Number((t.cpuMs / b.cpuMs).toFixed(2)) : null,
  }]));
}
