// Shared pieces of the fault suite: scale, waiting, worker processes and exact row accounting.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { Db } from '../../src/db/createDb.ts';
import type { SinkRequest } from './sink.ts';

/** FAULTS_QUICK=1 (CI) shrinks every scenario's event counts. */
export const QUICK = process.env.FAULTS_QUICK === '1';
export const scaled = (full: number, quick: number) => (QUICK ? quick : full);

export async function waitFor(condition: () => Promise<boolean> | boolean, timeoutMs: number, what = 'condition'): Promise<number> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return Date.now() - started;
}

const WORKER = fileURLToPath(new URL('./retryWorker.ts', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
}

/** A bare retry loop in its own process (test/helpers/retryWorker.ts); prints OVERCLAIM / LOST lines. */
export async function startWorker(children: ChildProcess[], databaseUrl: string, workerId: string, extra: Record<string, unknown>): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [WORKER, JSON.stringify({
    databaseUrl, workerId, inProcess: false, batchSize: 50, concurrency: 10, leaseSeconds: 30, pollIntervalMs: 100, ...extra,
  })], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  while (!out.includes('ready')) await once(child.stdout!, 'data');
  return { child, output: () => out };
}

export async function killAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(children.splice(0).filter((c) => c.exitCode === null && c.signalCode === null).map(async (c) => {
    c.kill('SIGCONT');
    c.kill('SIGKILL');
    await once(c, 'exit');
  }));
}

export async function countByStatus(db: Db): Promise<Record<string, number>> {
  const rows = await db.$queryRaw<{ status: string; n: number }[]>`
    select status::text, count(*)::int as n from dead_letters_current group by 1 order by 1`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/**
 * Exact row accounting: the rows per status are exactly `expected` (which must add up to the
 * inserted total), and every row outside PROCESSING has one attempt row per charged attempt,
 * numbered 1..attempts, at most one SUCCEEDED attempt (the last, iff the row is SUCCEEDED), and
 * no lease left behind. No attempt row points at a missing event.
 */
export async function expectExactAccounting(db: Db, total: number, expected: Record<string, number>): Promise<void> {
  expect(Object.values(expected).reduce((a, b) => a + b, 0)).toBe(total);
  expect(await countByStatus(db)).toEqual(expected);
  const [check] = await db.$queryRaw<{ inconsistent: number; orphans: number }[]>`
    with per as (
      select d.id, d.status, d.attempts, d.lease_token,
             count(a.id)::int as rows, count(distinct a.attempt_number)::int as numbers,
             coalesce(min(a.attempt_number), 1) as lo, coalesce(max(a.attempt_number), 0) as hi,
             count(a.id) filter (where a.outcome = 'SUCCEEDED')::int as successes,
             bool_or(a.outcome = 'SUCCEEDED' and a.attempt_number = d.attempts) as last_succeeded
        from dead_letters_current d left join delivery_attempts a on a.dead_letter_id = d.id
       where d.status <> 'PROCESSING'
       group by d.id, d.status, d.attempts, d.lease_token)
    select (select count(*)::int from per
             where rows <> attempts or numbers <> attempts or lo < 1 or hi <> attempts or successes > 1
                or (status = 'SUCCEEDED') <> coalesce(last_succeeded, false)
                or lease_token is not null) as inconsistent,
           (select count(*)::int from delivery_attempts a
             where not exists (select 1 from dead_letters_current d where d.id = a.dead_letter_id)) as orphans`;
  expect(check).toEqual({ inconsistent: 0, orphans: 0 });
}

/** Every request carried `webhook-id` = the event id; returns deliveries per event id. */
export function deliveriesById(requests: readonly SinkRequest[]): Map<string, number> {
  const seen = new Map<string, number>();
  for (const r of requests) {
    expect(r.headers['webhook-id']).toBe(r.json.id);
    seen.set(r.json.id, (seen.get(r.json.id) ?? 0) + 1);
  }
  return seen;
}
