// The steady load bench:retention runs in every phase, and the lock sampler that watches it.
//
// Load, on `table` (dead_letters, or the bench's partitioned copy):
//  * ingest: `connections` clients, each sending single-row plain SQL INSERTs (autocommit, the
//    producers' contract) paced at rate / connections per second; every insert's latency is kept.
//  * claims: one client claiming up to `claimBatch` due events every `claimEveryMs` (the engine's
//    SKIP LOCKED claim with a lease) and completing them in one fenced UPDATE, as the engine does.
//    The events it claims are the ones ingest added (due at once), so the queue stays near empty.
// Sampler: every 20 ms, the load's backends that wait on a heavyweight lock (pg_stat_activity
// wait_event_type 'Lock'), how long their statement has run by then (an upper bound on the wait)
// and who blocks them (pg_blocking_pids); and the locks the retention client holds on tables
// (indexes left out) and advisory keys.
import pg from 'pg';

export const INGEST_APP = 'retain-ingest';
export const CLAIM_APP = 'retain-claim';
export const RETENTION_APP = 'retain-retention';
const SAMPLE_MS = 20;

export interface LoadOptions {
  url: string;
  table: string;
  rate: number;
  connections: number;
  claimBatch: number;
  claimEveryMs: number;
}

/** What a retention phase removed: rows (or dead tuples), over how long, and its steps for the report. */
export interface Removal { rows: number; seconds: number; steps: string[] }

export interface LoadResult {
  ingestMs: number[];
  claimMs: number[];
  completeMs: number[];
  claimed: number;
  seconds: number;
}

export interface LockSamples {
  /** Longest statement age seen while the statement waited on a lock, ms (0: none seen). */
  maxWaitMs: number;
  /** Samples that caught a load statement waiting on a lock. */
  waitingSamples: number;
  /** application_name of the backends that blocked a load statement: samples, and the longest wait behind it, ms. */
  blockers: Record<string, { samples: number; maxMs: number }>;
  /** Per lock kind waited for (pg_stat_activity.wait_event: relation, tuple, object…): samples and the longest wait, ms. */
  byKind: Record<string, { samples: number; maxMs: number }>;
  /** Locks the retention client was seen holding or waiting for: "relation mode" (or "… waiting"). */
  retentionLocks: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function connect(url: string, applicationName: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: applicationName });
  client.on('error', () => {}); // the scratch database is dropped with (force) at the end
  await client.connect();
  return client;
}

/** Runs the load until `signal` aborts. */
export async function runLoad(o: LoadOptions, signal: AbortSignal): Promise<LoadResult> {
  const ingesters = await Promise.all(Array.from({ length: o.connections }, () => connect(o.url, INGEST_APP)));
  const claimer = await connect(o.url, CLAIM_APP);
  const result: LoadResult = { ingestMs: [], claimMs: [], completeMs: [], claimed: 0, seconds: 0 };
  const insert = `insert into ${o.table} (event_type, queue, source, payload, headers, error_kind, error_message)
                  values ('bench.ingest', 'orders', 'checkout', $1, '{"topic":"orders"}', 'DOWNSTREAM_API', $2)`;
  // Lazarus's queue state lives in dead_letter_states (dead_letters refuses state changes, LZ422);
  // the partitioned copy is one wide table.
  const states = o.table === 'dead_letters' ? 'dead_letter_states' : o.table;
  // `status = 'PENDING'` on the updated side too, so that the partitioned copy prunes to one partition.
  const claim = `
    with due as materialized (
      select id from ${states} where status = 'PENDING' and next_attempt_at <= now()
       order by next_attempt_at, id limit $1 for update skip locked)
    update ${states} d set status = 'PROCESSING', attempts = d.attempts + 1, lease_owner = 'bench',
           lease_token = gen_random_uuid(), lease_expires_at = now() + interval '30 seconds'
      from due where d.id = due.id and d.status = 'PENDING'
    returning d.id, d.lease_token`;
  // resolved_at is set here for the partitioned copy, which has no stamp trigger (on dead_letters the
  // trigger keeps a given value); it moves the row to the finished partition of this week.
  const complete = `
    update ${states} d set status = 'SUCCEEDED', resolved_at = now(), next_attempt_at = null,
           lease_owner = null, lease_token = null, lease_expires_at = null
      from unnest($1::bigint[], $2::uuid[]) as i(id, token)
     where d.id = i.id and d.lease_token = i.token and d.status = 'PROCESSING'`;
  const started = performance.now();
  const intervalMs = (1000 * o.connections) / o.rate;
  let n = 0;
  const ingest = ingesters.map(async (client, k) => {
    for (let i = 0; !signal.aborted; i++) {
      const due = started + (i + k / o.connections) * intervalMs;
      const ahead = due - performance.now();
      if (ahead > 0) await sleep(ahead);
      const t0 = performance.now();
      n += 1;
      await client.query(insert, [JSON.stringify({ orderId: n, customer: `c-${n % 977}`, note: 'x'.repeat(800) }), `HTTP 503 from inventory-service (request ${n})`]);
      result.ingestMs.push(performance.now() - t0);
    }
  });
  const claims = (async () => {
    while (!signal.aborted) {
      const next = performance.now() + o.claimEveryMs;
      let t0 = performance.now();
      const claimed = await claimer.query<{ id: string; lease_token: string }>(claim, [o.claimBatch]);
      result.claimMs.push(performance.now() - t0);
      if (claimed.rowCount) {
        t0 = performance.now();
        await claimer.query(complete, [claimed.rows.map((r) => r.id), claimed.rows.map((r) => r.lease_token)]);
        result.completeMs.push(performance.now() - t0);
        result.claimed += claimed.rowCount;
      }
      const rest = next - performance.now();
      if (rest > 0) await sleep(rest);
    }
  })();
  try {
    await Promise.all([...ingest, claims]);
  } finally {
    result.seconds = (performance.now() - started) / 1000;
    await Promise.all([...ingesters, claimer].map((c) => c.end()));
  }
  return result;
}

/** Samples lock waits of the load, and the retention client's locks, until `signal` aborts. */
export async function sampleLocks(url: string, signal: AbortSignal): Promise<LockSamples> {
  const client = await connect(url, 'retain-sampler');
  const samples: LockSamples = { maxWaitMs: 0, waitingSamples: 0, blockers: {}, byKind: {}, retentionLocks: [] };
  const held = new Set<string>();
  try {
    while (!signal.aborted) {
      const next = performance.now() + SAMPLE_MS;
      const { rows } = await client.query<{ wait_ms: number; kind: string; blockers: string[] }>(`
        select extract(epoch from clock_timestamp() - a.query_start) * 1000 as wait_ms, a.wait_event as kind,
               array(select coalesce(nullif(b.application_name, ''), b.backend_type) from pg_stat_activity b
                      where b.pid = any(pg_blocking_pids(a.pid))) as blockers
          from pg_stat_activity a
         where a.datname = current_database() and a.application_name = any($1::text[]) and a.wait_event_type = 'Lock'`,
        [[INGEST_APP, CLAIM_APP]]);
      for (const r of rows) {
        samples.waitingSamples += 1;
        samples.maxWaitMs = Math.max(samples.maxWaitMs, Number(r.wait_ms));
        const kind = (samples.byKind[r.kind] ??= { samples: 0, maxMs: 0 });
        kind.samples += 1;
        kind.maxMs = Math.max(kind.maxMs, Number(r.wait_ms));
        for (const b of new Set(r.blockers)) {
          const blocker = (samples.blockers[b] ??= { samples: 0, maxMs: 0 });
          blocker.samples += 1;
          blocker.maxMs = Math.max(blocker.maxMs, Number(r.wait_ms));
        }
      }
      const locks = await client.query<{ lock: string }>(`
        select regexp_replace(coalesce(l.relation::regclass::text, l.locktype), '_\\d{8}$', '_<week>') || ' ' || l.mode || case when l.granted then '' else ' (waiting)' end as lock
          from pg_locks l join pg_stat_activity a on a.pid = l.pid left join pg_class c on c.oid = l.relation
         where a.datname = current_database() and a.application_name = $1
           and (l.locktype = 'advisory' or c.relkind in ('r', 'p'))`, [RETENTION_APP]);
      for (const r of locks.rows) held.add(r.lock);
      const rest = next - performance.now();
      if (rest > 0) await sleep(rest);
    }
  } finally {
    await client.end();
  }
  samples.retentionLocks = [...held].sort();
  return samples;
}
