// A worker thread that watches one backend's snapshot while the main thread may be blocked: every
// `intervalMs` it reads backend_xmin and wait_event of the session named `applicationName` in
// `url`'s database, and (optionally) sends change hints to lazarus_changes from `notifyConnections`
// sessions at `notifyRate` per second in all. It runs on its own event loop, so it keeps sampling
// and sending while the main thread busy-waits. Messages: 'stop' → { samples, notified }.
import { parentPort, Worker, workerData } from 'node:worker_threads';
import pg from 'pg';

export interface XminSample {
  /** Epoch milliseconds. */
  at: number;
  xmin: string | null;
  waitEvent: string | null;
  /** now() − xact_start in ms: for an idle LISTEN session this dates from its last statement. */
  xactAgeMs: number | null;
}

export interface XminSamplerOptions {
  url: string;
  applicationName: string;
  intervalMs: number;
  notifyRate: number;
  notifyConnections: number;
  /** Ids in each hint, as the trigger lists up to 50 of a statement's rows; default 1. */
  idsPerHint?: number;
  /** Characters of padding added to each hint (parseHint accepts extra keys); default 0. */
  hintPadChars?: number;
}

export interface XminSamplerResult {
  samples: XminSample[];
  notified: number;
}

/** The largest now() − xact_start among samples with a backend_xmin (what a long-transaction probe reports). */
export function longestApparentXminAgeMs(samples: XminSample[]): number {
  return Math.max(0, ...samples.filter((s) => s.xmin !== null).map((s) => s.xactAgeMs ?? 0));
}

/** The longest run of consecutive samples with a backend_xmin, in milliseconds (0: never set). */
export function longestXminHoldMs(samples: XminSample[]): number {
  let longest = 0;
  let since: number | null = null;
  for (const sample of samples) {
    if (sample.xmin === null) since = null;
    else {
      since ??= sample.at;
      longest = Math.max(longest, sample.at - since);
    }
  }
  return longest;
}

/** Starts the sampler thread; resolves once it samples (and sends, if asked). */
export async function startXminSampler(options: XminSamplerOptions): Promise<{ stop(): Promise<XminSamplerResult> }> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { xminSampler: options } });
  const failed = new Promise<never>((_, reject) => worker.once('error', reject));
  const next = () => Promise.race([failed, new Promise<unknown>((resolve) => worker.once('message', resolve))]);
  await next();
  return {
    async stop() {
      worker.postMessage('stop');
      const result = (await next()) as XminSamplerResult;
      await worker.terminate();
      return result;
    },
  };
}

const run = async (options: XminSamplerOptions) => {
  const samples: XminSample[] = [];
  let stopping = false;
  let notified = 0;
  const sampler = new pg.Client({ connectionString: options.url, application_name: 'xmin-sampler' });
  const senders = Array.from({ length: options.notifyRate > 0 ? options.notifyConnections : 0 },
    () => new pg.Client({ connectionString: options.url, application_name: 'xmin-sampler-notify' }));
  await Promise.all([sampler, ...senders].map((client) => client.connect()));

  const sample = async () => {
    while (!stopping) {
      const { rows } = await sampler.query<{ xmin: string | null; wait_event: string | null; xact_age_ms: number | null }>(
        `select backend_xmin::text as xmin, wait_event,
                (extract(epoch from now() - xact_start) * 1000)::float8 as xact_age_ms
           from pg_stat_activity
          where datname = current_database() and application_name = $1`, [options.applicationName]);
      const row = rows[0];
      samples.push({ at: Date.now(), xmin: row?.xmin ?? null, waitEvent: row?.wait_event ?? null, xactAgeMs: row?.xact_age_ms ?? null });
      await new Promise((resolve) => setTimeout(resolve, options.intervalMs));
    }
  };
  // Each sender paces itself to its share of the rate; one hint per statement, as the trigger sends.
  const send = async (client: pg.Client, index: number) => {
    const perSecond = options.notifyRate / senders.length;
    const pad = 'x'.repeat(options.hintPadChars ?? 0);
    const idsCount = options.idsPerHint ?? 1;
    const started = performance.now();
    for (let n = 0; !stopping; n++) {
      const due = started + (n * 1000) / perSecond - performance.now();
      if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
      const max = index * 1_000_000 + (n + 1) * idsCount;
      const ids = Array.from({ length: idsCount }, (_, i) => max - i);
      // The trigger's shape (jsonb's key order), so the bytes per hint are the real ones.
      const hint = { n: idsCount, t: 'dead_letters', op: 'insert', max, ids, ...(pad ? { pad } : {}) };
      await client.query(`select pg_notify('lazarus_changes', $1)`, [JSON.stringify(hint)]);
      notified += 1;
    }
  };
  const running = Promise.all([sample(), ...senders.map(send)]);
  parentPort!.postMessage('ready');
  await new Promise<void>((resolve) => parentPort!.once('message', () => resolve()));
  stopping = true;
  await running;
  await Promise.all([sampler, ...senders].map((client) => client.end()));
  const result: XminSamplerResult = { samples, notified };
  parentPort!.postMessage(result);
};

if (parentPort && workerData?.xminSampler) void run(workerData.xminSampler as XminSamplerOptions);
