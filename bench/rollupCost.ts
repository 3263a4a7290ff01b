// npm run bench:rollups — what the stats-rollup triggers (both ledgers) cost writers, measured A/B in one run:
// 500-row multi-row INSERTs (≈ 3 KB rows, like bench:ingest), one-row INSERTs, full-table status
// UPDATEs and a DELETE, with the rollup triggers enabled and disabled alternately
// (ALTER TABLE … DISABLE TRIGGER between timed statements), one connection, one database.
// BENCH_DATABASE_URL (or TEST_DATABASE_URL) names an admin database; a scratch database is created
// and dropped. EVENTS (default 20,000), SINGLES (default 2,000) and ROUNDS (default 3) override sizes.
import { loadavg } from 'node:os';
import { inScratchDatabase } from './scratchDatabase.ts';
import { BATCH, measureTriggerCost, summarizeTriggerCost } from './triggerCost.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.EVENTS ?? 20_000);
const SINGLES = Number(process.env.SINGLES ?? 2_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
// Since the split the update and delete deltas share a trigger with the error groups' (and, on
// delete, the state row's removal and the tombstone): those triggers are toggled whole.
const TRIGGERS = ['tg_dead_letters__rollup_insert', 'tg_dead_letter_states__transitions', 'tg_dead_letters__update', 'tg_dead_letters__delete', 'tg_dead_letters__signature_rollup_update'];

await inScratchDatabase(adminUrl, async ({ client }) => {
  const totals = await measureTriggerCost({ client, triggers: TRIGGERS, events: EVENTS, singles: SINGLES, rounds: ROUNDS });
  const rows = (await client.query('select count(*)::int as n from dead_letters')).rows[0].n;
  const summary = summarizeTriggerCost(totals);
  console.log(JSON.stringify({
    batchInserts: `${EVENTS} rows in ${BATCH}-row statements, half each mode`, singleInserts: `${SINGLES} one-row statements, half each mode`,
    bulkUpdates: `${ROUNDS} full-table status updates per mode over ${EVENTS + SINGLES} rows`, deletes: `half of the rows per mode`, rowsLeft: rows,
    loadAverage1m: Number(loadavg()[0]!.toFixed(2)), summary,
  }, null, 2));
});
