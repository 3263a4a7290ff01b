// bench:live's periodic work (see bench/live.ts): the seed it works on, the loop that runs the
// service's periodic jobs beside the inserts, and a sampler of every transaction that holds an xid
// in the scratch database (what holds the live feed's horizon back), by application_name.
import pg from 'pg';
import { createDb } from '../src/db/createDb.ts';
import { purgeFinishedDeadLetters } from '../src/db/sql/purgeFinishedDeadLetters.ts';
import { resumingDeliveryCompaction } from '../src/domain/deliveryRollups.ts';
import { sizedFolds } from '../src/domain/errorGroupFolding.ts';
import { resumingCompactions } from '../src/domain/statsRollups.ts';
import { evaluateAlertRules } from '../src/workers/alertEvaluation.ts';
import { resumingRetentionPasses } from '../src/workers/retention.ts';
import { bulkLoadDeadLetters } from './bulkLoadDeadLetters.ts';

export const PERIODIC_APP = 'bench-periodic';
const DAY_MS = 86_400_000;
const RETENTION_MS = 30 * DAY_MS;

export function percentiles(values: number[]) {
  const s = Float64Array.from(values).sort();
  const p = (q: number) => (s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : NaN);
  return { n: s.length, p50: +p(0.5).toFixed(2), p95: +p(0.95).toFixed(2), p99: +p(0.99).toFixed(2), max: +(s.at(-1) ?? NaN).toFixed(2) };
}

/** The side of a deadlock PostgreSQL aborted, from pg or from Prisma's driver adapter. */
export const isDeadlock = (error: unknown): boolean => {
  const e = error as { code?: string; message?: string; meta?: { driverAdapterError?: { cause?: { originalCode?: string; code?: string } } } };
  const cause = e?.meta?.driverAdapterError?.cause;
  return e?.code === '40P01' || cause?.originalCode === '40P01' || cause?.code === '40P01' || /deadlock detected/.test(e?.message ?? '');
};
/** Runs `statement` until it is not a deadlock's victim, counting each retry in `deadlocks`. */
export async function retryingDeadlocks<T>(deadlocks: { n: number }, statement: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await statement();
    } catch (error) {
      if (!isDeadlock(error)) throw error;
      deadlocks.n += 1;
    }
  }
}

/**
 * `events` events bulk-loaded as if created 60–90 days ago (the read bench's mix: 40% PENDING, 60%
 * finished a minute after), so every finished one is past the 30-day retention age; and one enabled
 * rule per metric alert trigger, so alert evaluation reads its figures.
 */
export async function seedEvents(databaseUrl: string, events: number, log: (line: string) => void): Promise<void> {
  await bulkLoadDeadLetters({ url: databaseUrl, rows: events, mix: 'read', now: new Date(Date.now() - 60 * DAY_MS), resolvedAt: 'updated', log });
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await pool.query(`insert into alert_rules (name, trigger, threshold, target_url, signing_secret)
                      select 'bench ' || t, t::"AlertTrigger", 1000000000, 'http://127.0.0.1:9/', 'whsec_' || md5(t)
                        from unnest(array['BACKLOG', 'OLDEST_PENDING_AGE', 'EXHAUSTED_RATE']) t`);
  } finally {
    await pool.end();
  }
}

/** A retention backlog of finished events and a rollup ledger of zero-sum delta rows, as hours of traffic leave them. */
export async function seedLedgers(databaseUrl: string, purgeRows: number, ledgerRows: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await pool.query(`insert into dead_letters (event_type, status, resolved_at, next_attempt_at, payload)
                      select 'old', 'SUCCEEDED', now() - interval '40 days', null, jsonb_build_object('n', g) from generate_series(1, $1::int) g`, [purgeRows]);
    await pool.query(`insert into dead_letter_rollups (bucket, event_type, queue, error_kind, status, count, attempts)
                      select date_trunc('hour', now()) - (g % 500) * interval '1 hour', 'ledger.' || (g % 40), 'default', 'UNKNOWN', 'PENDING',
                             case when g % 2 = 0 then 1 else -1 end, 0
                        from generate_series(1, $1::int) g`, [ledgerRows]);
  } finally {
    await pool.end();
  }
}

export interface Background {
  stop(): Promise<unknown>;
}

/**
 * The service's periodic database work, in a loop until stopped, on its own connections
 * (application_name bench-periodic): `batched` runs the service's jobs as it runs them now (rollup
 * and delivery-rollup compaction, error-group folding, alert evaluation and retention, each in its
 * own loop, 50 ms after its last run ended; retention's batches back to back), otherwise as they ran before (the whole ledger in one statement, 5,000-row purges).
 * Each statement (each batch, where the job reports batches) is timed by job. A statement that
 * loses a deadlock against the inserts is retried and counted; any other error ends the loop and
 * is thrown by stop().
 */
export function periodicWork(databaseUrl: string, batched: boolean): () => Background {
  return () => {
    const handle = createDb(databaseUrl, { poolMax: 5, acquireTimeoutMs: 5_000, statementTimeoutMs: 60_000, applicationName: PERIODIC_APP });
    const abort = new AbortController();
    const byJob = new Map<string, number[]>();
    const deadlocks = { n: 0 };
    const record = (job: string, ms: number) => {
      let list = byJob.get(job);
      if (!list) byJob.set(job, (list = []));
      list.push(ms);
    };
    /** Times each batch through the job's onBatch hook (from the previous batch's end). */
    const batches = async (job: string, run: (onBatch: () => void) => Promise<unknown>) => {
      let t0 = performance.now();
      await retryingDeadlocks(deadlocks, () => run(() => {
        record(job, performance.now() - t0);
        t0 = performance.now();
      }));
    };
    const whole = async (job: string, run: () => Promise<unknown>) => {
      const t0 = performance.now();
      await retryingDeadlocks(deadlocks, run);
      record(job, performance.now() - t0);
    };
    let onRetentionBatch = () => {};
    let onCompactionBatch = () => {};
    let onFoldBatch = () => {};
    const compaction = resumingCompactions(handle.db, () => onCompactionBatch());
    const folds = sizedFolds(handle.db, () => onFoldBatch());
    const deliveryCompaction = resumingDeliveryCompaction(handle.db);
    // Back to back (the service rests 3× each batch), so that retention runs through the whole phase.
    const retention = resumingRetentionPasses(handle.db, { olderThanMs: RETENTION_MS, onBatch: () => onRetentionBatch() });
    /** Runs `once` again and again, 50 ms apart, until stopped: each job on its own, as the service's jobs run side by side. */
    const repeat = async (once: () => Promise<unknown>) => {
      try {
        while (!abort.signal.aborted) {
          await once();
          await new Promise((r) => setTimeout(r, 50));
        }
      } catch (error) {
        abort.abort();
        throw error;
      }
    };
    // A failed job stops the others; the first failure is thrown by stop().
    const loop = Promise.allSettled(batched
      ? [
          repeat(() => batches('rollup compaction', (onBatch) => ((onCompactionBatch = onBatch), compaction()))),
          repeat(() => whole('delivery rollup compaction (whole run)', deliveryCompaction)),
          repeat(() => batches('error group folding', (onBatch) => ((onFoldBatch = onBatch), folds(abort.signal)))),
          repeat(() => whole('alert evaluation (whole run)', () => evaluateAlertRules(handle.db))),
          repeat(() => batches('retention', (onBatch) => ((onRetentionBatch = onBatch), retention(abort.signal)))),
        ]
      : [
          repeat(() => whole('rollup compaction', () => handle.db.$queryRaw`select lazarus_compact_rollups()`)),
          repeat(async () => {
            for (let purged = 5_000; !abort.signal.aborted && purged === 5_000;) {
              const t0 = performance.now();
              purged = (await retryingDeadlocks(deadlocks, () => purgeFinishedDeadLetters(handle.db, RETENTION_MS, 5_000)))?.purged ?? 0;
              record('retention', performance.now() - t0);
            }
          }),
        ]).then((settled) => {
      const failed = settled.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    });
    // Held until stop() awaits it: a failure mid-phase must not become an unhandled rejection that
    // kills the bench before its cleanup runs.
    const outcome = loop.then(() => null, (error: unknown) => ({ error }));
    return {
      async stop() {
        abort.abort();
        const failed = await outcome;
        await handle.close();
        if (failed) throw failed.error;
        return { deadlocks: deadlocks.n, ...Object.fromEntries([...byJob].map(([job, ms]) => [job, percentiles(ms)])) };
      },
    };
  };
}

interface HeldTransaction {
  app: string;
  heldMs: number;
  query: string;
}

/**
 * Samples pg_stat_activity every `intervalMs` for transactions of this database that hold an xid
 * (they hold back the live feed's horizon) and keeps each one's longest observed age, now() −
 * xact_start. stop() returns per application_name the transactions seen, how many were seen past
 * 200 ms, the longest, and the five longest with their statement.
 */
export function sampleHeldTransactions(databaseUrl: string, intervalMs = 20): Background {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'bench-sampler' });
  client.on('error', () => {});
  const held = new Map<string, HeldTransaction>();
  let running = true;
  const loop = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ key: string; app: string; held_ms: number; query: string }>(`
        select pid || '/' || xact_start as key, application_name as app,
               extract(epoch from clock_timestamp() - xact_start) * 1000 as held_ms, left(query, 100) as query
          from pg_stat_activity
         where datname = current_database() and backend_xid is not null and pid <> pg_backend_pid()`);
      for (const r of rows) {
        const seen = held.get(r.key);
        if (!seen || seen.heldMs < r.held_ms) held.set(r.key, { app: r.app, heldMs: r.held_ms, query: r.query });
      }
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();
  const outcome = loop.then(() => null, (error: unknown) => ({ error }));
  return {
    async stop() {
      running = false;
      const failed = await outcome;
      await client.end().catch(() => {});
      if (failed) throw failed.error;
      const byApp: Record<string, { seen: number; over200ms: number; longestMs: number; longest: string[] }> = {};
      for (const t of held.values()) {
        const a = (byApp[t.app || '(none)'] ??= { seen: 0, over200ms: 0, longestMs: 0, longest: [] });
        a.seen += 1;
        if (t.heldMs > 200) a.over200ms += 1;
        a.longestMs = Math.max(a.longestMs, Math.round(t.heldMs));
      }
      for (const [app, a] of Object.entries(byApp)) {
        a.longest = [...held.values()].filter((t) => (t.app || '(none)') === app).sort((x, y) => y.heldMs - x.heldMs).slice(0, 5)
          .map((t) => `${Math.round(t.heldMs)} ms: ${t.query.replace(/\s+/g, ' ')}`);
      }
      return byApp;
    },
  };
}
