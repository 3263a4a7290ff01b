// npm run bench:retry:claim — what a claim costs when the events it must pass over pile up
// (issue #6). Each scenario times claimDueDeadLetters (batch 100, its leases released after each
// claim, untimed; median of BENCH_CLAIMS, default 30) at growing levels and prints each next to
// its first level, where nothing piles up:
//   blocked key   an ordered type has 300 keys with one due event each; one more key's head is
//                 EXHAUSTED and events wait behind it, due before all the others, so the scan in
//                 due order meets every one of them first (0, a tenth of and all BENCH_BEHIND,
//                 default 50,000)
//   type limit    the claimed type has a concurrency limit (1,000) and 0, 2,000 or 10,000
//                 events of another type are in flight (PROCESSING, leased) elsewhere
//   no limit      the claimed type has no concurrency limit, so nothing to count, and 0, 2,000
//                 or 10,000 of its events are in flight, with statistics taken before the leases
//                 (as an analyze at a quiet hour leaves them)
// BENCH_DATABASE_URL: an admin URL; a scratch database is created and dropped.
import { randomBytes } from 'node:crypto';
import { createDb } from '../src/db/createDb.ts';
import { migrate } from '../src/db/migrate.ts';
import { claimDueDeadLetters } from '../src/db/sql/claimDueDeadLetters.ts';
import { releaseLeases } from '../src/db/sql/releaseLeases.ts';
import { createDatabase, dropDatabase } from '../test/helpers/databases.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const BEHIND = Number(process.env.BENCH_BEHIND ?? 50_000);
const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 30);
const name = `lazarus_claim_${randomBytes(4).toString('hex')}`;
const url = await createDatabase(adminUrl, name);
const handle = createDb(url, { poolMax: 2, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000, applicationName: 'lazarus-bench' });
const { pool, db } = handle;

/** Median claim time in ms; every claim must take a full batch, none of it from `notFrom` (a key). */
async function timeClaims(notFrom: string | null, analyze: boolean): Promise<number> {
  if (analyze) await pool.query('vacuum analyze dead_letters, dead_letter_states');
  const times: number[] = [];
  for (let i = 0; i < CLAIMS + 3; i++) {
    const started = performance.now();
    const claimed = await claimDueDeadLetters(db, { limit: 100, workerId: 'bench', leaseSeconds: 30, inProcessEventTypes: [] });
    const ms = performance.now() - started;
    if (claimed.length !== 100 || (notFrom !== null && claimed.some((c) => c.orderingKey === notFrom))) throw new Error(`claim ${i} took ${claimed.length} events or a waiting one`);
    await releaseLeases(db, claimed);
    if (i >= 3) times.push(ms); // the first three warm the caches and the prepared statement
  }
  return times.toSorted((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

interface Scenario {
  name: string;
  what: string;
  setup: string;
  /** Each level: its size, and the SQL that adds to the previous level ($1, $2: from, to). */
  levels: Array<{ size: number; add: string }>;
  notFrom: string | null;
  /** Analyze before every level (true), or only before the first: statistics that predate the leases. */
  analyzeEachLevel: boolean;
}

const waiting = `insert into dead_letters (event_type, ordering_key, ordering_seq, next_attempt_at, created_at)
  select 'order.placed', 'cust-blocked', g, now() - interval '1 hour' + g * interval '1 ms', now() - interval '1 hour'
    from generate_series($1::int, $2::int) g`;
const inFlightOf = (eventType: string) => `insert into dead_letters (event_type, status, attempts, next_attempt_at, lease_owner, lease_token, lease_expires_at)
  select '${eventType}', 'PROCESSING', 1, now(), 'elsewhere', gen_random_uuid(), now() + interval '1 hour' from generate_series($1::int, $2::int) g`;
const inFlight = inFlightOf('other');

const SCENARIOS: Scenario[] = [
  {
    name: 'blocked key',
    what: 'events waiting behind the blocked head',
    setup: `
      insert into retry_policies (event_type, ordered, target_url) values ('order.placed', true, 'https://example.com/hook');
      insert into dead_letters (event_type, ordering_key, ordering_seq, status, attempts, next_attempt_at, created_at)
      values ('order.placed', 'cust-blocked', 0, 'EXHAUSTED', 10, null, now() - interval '2 hours');
      insert into dead_letters (event_type, ordering_key, ordering_seq, next_attempt_at)
      select 'order.placed', 'cust-' || g, 1, now() - interval '1 minute' from generate_series(1, 300) g;`,
    levels: [{ size: 0, add: '' }, { size: BEHIND / 10, add: waiting }, { size: BEHIND, add: waiting }],
    notFrom: 'cust-blocked',
    analyzeEachLevel: true,
  },
  {
    name: 'type limit',
    what: 'events of another type in flight',
    setup: `
      insert into retry_policies (event_type, target_url, concurrency) values ('limited', 'https://example.com/hook', 1000);
      insert into dead_letters (event_type, next_attempt_at) select 'limited', now() - interval '1 hour' from generate_series(1, 5000) g;`,
    levels: [{ size: 0, add: '' }, { size: 2_000, add: inFlight }, { size: 10_000, add: inFlight }],
    notFrom: null,
    analyzeEachLevel: true,
  },
  {
    name: 'no limit',
    what: 'events of the type in flight',
    setup: `
      insert into retry_policies (event_type, target_url) values ('unlimited', 'https://example.com/hook');
      insert into dead_letters (event_type, next_attempt_at) select 'unlimited', now() - interval '1 hour' from generate_series(1, 5000) g;`,
    levels: [{ size: 0, add: '' }, { size: 2_000, add: inFlightOf('unlimited') }, { size: 10_000, add: inFlightOf('unlimited') }],
    notFrom: null,
    analyzeEachLevel: false,
  },
];

try {
  const lines = ['| scenario | level | claim ms | × first level |', '| --- | ---: | ---: | ---: |'];
  for (const scenario of SCENARIOS) {
    await pool.query('drop schema public cascade; create schema public');
    await migrate(url);
    await pool.query(scenario.setup);
    let size = 0;
    let first = 0;
    for (const level of scenario.levels) {
      if (level.add) await pool.query(level.add, [size + 1, level.size]);
      size = level.size;
      const ms = await timeClaims(scenario.notFrom, scenario.analyzeEachLevel || size === 0);
      first ||= ms;
      lines.push(`| ${scenario.name} | ${size.toLocaleString('en')} ${scenario.what} | ${ms.toFixed(1)} | ${(ms / first).toFixed(1)} |`);
      process.stderr.write(`${scenario.name}, ${size}: ${ms.toFixed(1)} ms\n`);
    }
  }
  console.log(`\nClaims of 100, median of ${CLAIMS}\n`);
  console.log(lines.join('\n'));
} finally {
  await handle.close();
  await dropDatabase(adminUrl, name);
}
