// The retry loop as the service runs it: own pool, in-process handlers, /metrics, clean close.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import type { DeadLetterHandler } from '../src/workers/retry/delivery.ts';
import { startService } from '../src/service.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { silentLogger } from './helpers/retry.ts';

const t = useTestDatabase();

describe('the service with the retry loop', () => {
  it('delivers through a registered in-process handler, serves /metrics and stops cleanly', async () => {
    const event = await insertDeadLetter(t.db);
    const config = loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, RETRY_POLL_INTERVAL_MS: '50' });
    let delivered!: () => void;
    const isDelivered = new Promise<void>((resolve) => (delivered = resolve));
    const handlers = new Map<string, DeadLetterHandler>([['order.placed', async () => delivered()]]);
    const service = await startService(config, silentLogger, { handlers });
    try {
      await isDelivered;
      let status = '';
      while (status !== 'SUCCEEDED') {
        status = (await t.db.deadLetter.findUniqueOrThrow({ where: { id: event.id } })).status;
        if (status !== 'SUCCEEDED') await new Promise((r) => setTimeout(r, 20));
      }

      const response = await fetch(`${service.url}/metrics`);
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toContain('lazarus_dead_letters{status="SUCCEEDED",event_type="order.placed"} 1');
      expect(text).toContain('lazarus_delivery_attempts_total{event_type="order.placed",outcome="SUCCEEDED"} 1');
      const pools = await t.db.$queryRaw<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where application_name = 'lazarus-retry' and datname = current_database()`;
      expect(pools[0]!.n).toBeGreaterThan(0);
    } finally {
      await service.close();
    }
    // A closed client's backend leaves pg_stat_activity a moment after the socket closes.
    let left: { application_name: string }[] = [];
    for (let i = 0; i < 50; i++) {
      left = await t.db.$queryRaw<{ application_name: string }[]>`
        select application_name from pg_stat_activity where application_name in ('lazarus-retry', 'lazarus-api') and datname = current_database()`;
      if (left.length === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(left).toEqual([]);
  });
});

describe('retry configuration', () => {
  it('has defaults and rejects bad values naming the variable', () => {
    expect(loadConfig({}).retry).toEqual({
      enabled: true, pollIntervalMs: 1000, batchSize: 100, concurrency: 10, leaseSeconds: 30, poolMax: 4, claimAhead: true, retentionDays: 30,
    });
    expect(loadConfig({ RETRY_CLAIM_AHEAD: 'false' }).retry.claimAhead).toBe(false);
    expect(() => loadConfig({ RETRY_BATCH_SIZE: '0' })).toThrow(/RETRY_BATCH_SIZE:/);
    expect(() => loadConfig({ RETRY_LEASE_SECONDS: 'soon' })).toThrow(/RETRY_LEASE_SECONDS:/);
    expect(() => loadConfig({ RETENTION_DAYS: '-1' })).toThrow(/RETENTION_DAYS:/);
    expect(() => loadConfig({ RETRY_CLAIM_AHEAD: 'maybe' })).toThrow(/RETRY_CLAIM_AHEAD:/);
  });
});
