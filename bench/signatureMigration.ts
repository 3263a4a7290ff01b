// npm run bench:signature-migration — how long migration 20261126100000_stack_signatures takes to
// move existing rows to the groups their stacks say, at ROWS rows (default 1,000,000).
// A scratch database is migrated up to the migration before it, filled by the bench bulk loader
// (bench/bulkLoadDeadLetters.ts: the read benches' synthetic rows, one in six with a one-frame
// stack in one of 50 files), its error groups folded, then the migration is applied and timed, and
// every group is checked against a scan. ALL_STACKS=1 first gives every row a 6-frame Node stack
// (in one of 50 call sites; written with triggers off, so only the group keys see it): the case
// where every row moves.
// It measures a migration of the schema before the queue-state split (20261126130000): the bulk
// loader now builds the split's tables, so run it from a checkout before that migration landed
// (e.g. a15f4bd); at main it stops at the loader's trigger check. Not in CI's bench smokes for that.
// BENCH_DATABASE_URL (or TEST_DATABASE_URL) names an admin database; the scratch database is dropped.
import { rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { pino } from 'pino';
import { migrate } from '../src/db/migrate.ts';
import { copyOfMigrations } from '../test/helpers/migrations.ts';
import { bulkLoadDeadLetters } from './bulkLoadDeadLetters.ts';
import { inScratchDatabase } from './scratchDatabase.ts';

const MIGRATION = '20261126100000_stack_signatures';
const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const ROWS = Number(process.env.ROWS ?? 1_000_000);
const ALL_STACKS = process.env.ALL_STACKS === '1';

const dirs = { before: await copyOfMigrations((entry) => entry < MIGRATION), upTo: await copyOfMigrations((entry) => entry <= MIGRATION) };
try {
  await inScratchDatabase(adminUrl, async ({ url, client }) => {
    // The loader writes group keys with lazarus_group_signature; before the migration it is the old key.
    await client.query(`create function lazarus_group_signature(fingerprint text, error_signature text, error_stack text) returns text
                          language sql immutable as 'select coalesce(fingerprint, error_signature)'`);
    const load = await bulkLoadDeadLetters({ url, rows: ROWS });
    await client.query('drop function lazarus_group_signature(text, text, text)');
    if (ALL_STACKS) {
      await client.query(`set session_replication_role = replica`);
      await client.query(`update dead_letters set error_stack = 'Error: ' || error_message || chr(10) ||
          '    at handler' || (id % 50) || ' (/app/src/handlers/h' || (id % 50) || '.ts:' || (id % 300) || ':11)' || chr(10) ||
          '    at async consume (/app/src/kafka/consumer.ts:57:9)' || chr(10) ||
          '    at async Runner.processEachMessage (/app/node_modules/kafkajs/src/consumer/runner.js:231:9)' || chr(10) ||
          '    at async onBatch (/app/node_modules/kafkajs/src/consumer/runner.js:447:9)' || chr(10) ||
          '    at async Runner.handleBatch (/app/node_modules/kafkajs/src/consumer/runner.js:461:5)' || chr(10) ||
          '    at async /app/node_modules/kafkajs/src/consumer/runner.js:584:13'`);
      await client.query(`set session_replication_role = origin`);
      await client.query('vacuum analyze dead_letters');
    }
    const count = async (sql: string) => Number((await client.query(sql)).rows[0].n);
    const withStacks = await count('select count(*) as n from dead_letters where error_stack is not null');
    const groupsBefore = await count('select count(*) as n from error_groups');
    const start = performance.now();
    await migrate(url, { migrationsDir: dirs.upTo, logger: pino({ level: 'silent' }) });
    const migrationMs = performance.now() - start;
    const { rows: [check] } = await client.query<{ groups: number; differing: number; misfiled: number }>(`
      with scan as (select error_group_id as id, count(*) as total, sum(lazarus_is_unresolved(status)) as unresolved from dead_letters group by 1)
      select count(*)::int as groups,
             count(*) filter (where s.total is distinct from g.total_count or s.unresolved is distinct from g.unresolved_count)::int as differing,
             (select count(*)::int from dead_letters d left join error_groups g on g.id = d.error_group_id
               where g.signature is distinct from lazarus_group_signature(d.fingerprint, d.error_signature, d.error_stack)) as misfiled
        from scan s full join error_groups g using (id)`);
    console.log(JSON.stringify({
      rows: ROWS, allStacks: ALL_STACKS, rowsWithStacks: withStacks, groupsBefore, groupsAfter: check!.groups,
      migrationSeconds: Number((migrationMs / 1000).toFixed(1)), bulkLoadSeconds: Number(load.totalSeconds.toFixed(0)),
      groupsDifferingFromScan: check!.differing, rowsInAnotherGroupThanTheirKey: check!.misfiled, loadAverage1m: Number(loadavg()[0]!.toFixed(2)),
    }, null, 2));
    if (check!.differing || check!.misfiled) process.exitCode = 1;
  }, { migrationsDir: dirs.before });
} finally {
  for (const dir of Object.values(dirs)) await rm(dir, { recursive: true, force: true });
}
