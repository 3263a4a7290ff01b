// The shipped Prometheus rules and Grafana dashboard name only metrics the service exports.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { startService, type RunningService } from '../src/service.ts';
import { useTestDatabase } from './helpers/db.ts';
import { silentLogger } from './helpers/retry.ts';

const t = useTestDatabase();
let service: RunningService;
let exported: Set<string>;

/** Metric families on /metrics, from their `# TYPE` lines, with a histogram's series names. */
function metricNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name! + suffix);
  }
  return names;
}

/** Every `lazarus_…` metric a file names (recording rules are `lazarus:…`, alerts `Lazarus…`). */
async function namedIn(path: string): Promise<string[]> {
  const text = await readFile(new URL(`../${path}`, import.meta.url), 'utf8');
  return [...new Set([...text.matchAll(/\blazarus_[a-z0-9_]+/g)].map((m) => m[0]))];
}

beforeAll(async () => {
  service = await startService(loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url }), silentLogger);
  exported = metricNames(await (await fetch(`${service.url}/metrics`)).text());
});
afterAll(async () => service?.close());

describe('monitoring files shipped in deploy/', () => {
  it.each(['deploy/prometheus/lazarus-rules.yml', 'deploy/grafana/lazarus.json'])('%s names only exported metrics', async (path) => {
    const named = await namedIn(path);

    expect(named.length).toBeGreaterThan(3);
    expect(named.filter((name) => !exported.has(name))).toEqual([]);
  });

  it('finds a metric the service does not export', () => {
    expect(exported.has('lazarus_delivery_duration_seconds_bucket')).toBe(true);
    expect(exported.has('lazarus_dead_letter')).toBe(false);
  });
});

describe('lazarus_change_horizon_lag_seconds', () => {
  const lag = async () => Number((await (await fetch(`${service.url}/metrics`)).text()).match(/^lazarus_change_horizon_lag_seconds (\S+)$/m)![1]);

  it('shows how long an open writing transaction in this database has held the feed back', async () => {
    const holder = t.handle.pool;
    const client = await holder.connect();
    try {
      await client.query('begin');
      await client.query('select pg_current_xact_id()');
      const { rows } = await client.query<{ age: number }>('select extract(epoch from now() - xact_start)::float8 as age from pg_stat_activity where pid = pg_backend_pid()');
      const held = await lag();
      await client.query('commit');
      const released = await lag();

      expect(held).toBeGreaterThanOrEqual(rows[0]!.age);
      expect(released).toBeLessThan(held);
    } finally {
      client.release();
    }
  });
});
