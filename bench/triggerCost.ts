// What a set of triggers on dead_letters costs writers, measured A/B on one connection (bench:rollups,
// bench:groups): 500-row multi-row INSERTs (≈ 3 KB rows, like bench:ingest), one-row INSERTs,
// full-table status UPDATEs and a DELETE, with the triggers enabled and disabled alternately
// (ALTER TABLE … DISABLE TRIGGER between timed statements). Load on this machine swings by 5-10x
// within seconds, so modes alternate at a fine grain (every batch, every block of single inserts,
// every bulk update) and the totals per mode are compared. Beside the wall-clock time, the
// PostgreSQL backend's own CPU time is summed per mode when its /proc/<pid>/stat is readable (the
// database on this machine): what the triggers cost the database, with other processes' load and
// the commit's fsync wait left out (USER_HZ ticks, 10 ms each; blocks of ≥ 0.5 s keep it to ~2 %).
import { readFile } from 'node:fs/promises';
import type pg from 'pg';

export const BATCH = 500;
type Mode = 'on' | 'off';
export type TriggerCostKey = 'batchInsertMs' | 'singleInsertMs' | 'bulkUpdateMs' | 'deleteMs';
export type TriggerCostTotals = Record<TriggerCostKey, Record<Mode, number>> & {
  /** The backend's CPU milliseconds per measurement and mode; null when /proc cannot tell. */
  cpu: Record<TriggerCostKey, Record<Mode, number>> | null;
};
export const TICK_MS = 10; // USER_HZ on Linux: /proc counts CPU time in 10 ms ticks

/** CPU milliseconds (user + system) the process `pid` has used, or null where /proc cannot say. */
export async function cpuMsOf(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime, stime (fields 14 and 15)
  } catch {
    return null;
  }
}

export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

export async function measureTriggerCost(o: {
  client: pg.Client;
  triggers: readonly string[];
  events: number;
  singles: number;
  rounds: number;
  /** The fingerprint of row i (null: none). */
  fingerprint?: (i: number) => string | null;
  /** The error stack of row i (null: none). */
  stack?: (i: number) => string | null;
}): Promise<TriggerCostTotals> {
  const { client } = o;
  const filler = 'x'.repeat(2_600);
  const kinds = ['order.placed', 'order.shipped', 'payment.captured', 'user.signup'];
  const insertBatch = async (start: number, n: number) => {
    const values: unknown[] = [];
    const tuples: string[] = [];
    for (let k = 0; k < n; k++) {
      const i = start + k;
      const b = values.length;
      values.push(kinds[i % 4], JSON.stringify({ orderId: i, note: filler }), `HTTP 503 from inventory-service (request ${i})`, o.fingerprint?.(i) ?? null, o.stack?.(i) ?? null);
      tuples.push(`($${b + 1}, 'orders', 'checkout', $${b + 2}::jsonb, '{}'::jsonb, 'DOWNSTREAM_API', $${b + 3}, $${b + 4}, $${b + 5})`);
    }
    await client.query(`insert into dead_letters (event_type, queue, source, payload, headers, error_kind, error_message, fingerprint, error_stack) values ${tuples.join(',')}`, values);
  };
  const setTriggers = async (mode: Mode) => {
    // A trigger is named tg_<table>__<event>: dead_letters or, since the split, dead_letter_states.
    for (const trigger of o.triggers) await client.query(`alter table ${/^tg_(.+?)__/.exec(trigger)![1]} ${mode === 'on' ? 'enable' : 'disable'} trigger ${trigger}`);
  };
  const zero = () => ({ batchInsertMs: { on: 0, off: 0 }, singleInsertMs: { on: 0, off: 0 }, bulkUpdateMs: { on: 0, off: 0 }, deleteMs: { on: 0, off: 0 } });
  const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  const cpu = (await cpuMsOf(pid)) === null ? null : zero();
  const totals: TriggerCostTotals = { ...zero(), cpu };
  // Wall-clock and backend CPU of one timed block, added to the mode's totals.
  const measure = async (key: TriggerCostKey, mode: Mode, fn: () => Promise<unknown>) => {
    const cpuBefore = cpu ? await cpuMsOf(pid) : null;
    totals[key][mode] += await timed(fn);
    if (cpu && cpuBefore !== null) cpu[key][mode] += ((await cpuMsOf(pid)) ?? cpuBefore) - cpuBefore;
  };
  const order = (i: number) => (i % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const));
  await client.query('truncate dead_letters, dead_letter_actions, delivery_attempts, redrives, redrive_items, redrive_actions');
  let next = 0;
  for (let i = 0; i < o.events / BATCH / 2; i++) {
    for (const mode of order(i)) {
      await setTriggers(mode);
      await measure('batchInsertMs', mode, () => insertBatch(next, BATCH));
      next += BATCH;
    }
  }
  for (let i = 0; i < o.singles / 50 / 2; i++) {
    for (const mode of order(i)) {
      await setTriggers(mode);
      await measure('singleInsertMs', mode, async () => {
        for (let k = 0; k < 50; k++) await insertBatch(next++, 1);
      });
    }
  }
  await client.query('vacuum analyze dead_letters');
  let flip = 0;
  for (let i = 0; i < o.rounds; i++) {
    for (const mode of order(i)) {
      await setTriggers(mode);
      const status = flip++ % 2 === 0 ? 'EXHAUSTED' : 'PENDING';
      await measure('bulkUpdateMs', mode, () => client.query(`update dead_letter_states set status = $1::"DeadLetterStatus"`, [status]));
    }
  }
  for (const mode of order(0)) {
    await setTriggers(mode);
    await measure('deleteMs', mode, () => client.query(`delete from dead_letters where id % 2 = $1`, [mode === 'on' ? 0 : 1]));
  }
  await setTriggers('on');
  return totals;
}

/** Per measurement: milliseconds with the triggers on and off, and their ratio. */
export function summarizeTriggerCost(totals: TriggerCostTotals) {
  const { cpu: _cpu, ...wall } = totals;
  return Object.fromEntries(Object.entries(wall).map(([k, v]) => [k, { triggersOn: Math.round(v.on), triggersOff: Math.round(v.off), onOverOff: Number((v.on / v.off).toFixed(2)) }]));
}
