// Prometheus metrics for the live feed, on the same registry as the retry engine's (/metrics).
// Values are read from the listener, the feed and the health check at scrape time.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Db } from '../db/createDb.ts';
import { oldestWritingTransactionAgeSeconds } from '../db/sql/oldestWritingTransaction.ts';
import type { ChangeFeed } from './changeFeed.ts';
import type { ChangeListener } from './changeListener.ts';
import type { ListenerHealth } from './listenerHealth.ts';

export interface LiveMetricsSources {
  db: Db;
  listener: ChangeListener;
  feed: ChangeFeed;
  health: ListenerHealth;
}

export function registerLiveMetrics(registry: Registry, { db, listener, feed, health }: LiveMetricsSources): void {
  const counter = (name: string, help: string, read: () => number) =>
    new Counter({
      name, help, registers: [registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name, help, registers: [registry],
      collect() {
        this.set(read());
      },
    });
  counter('lazarus_listener_reconnects_total', 'Times the LISTEN connection was re-established after the first connect.', () => listener.reconnects());
  counter('lazarus_listener_forced_reconnects_total', 'Reconnects forced because a probe NOTIFY did not come back.', () => health.stats().forcedReconnects);
  counter('lazarus_listener_probe_failures_total', 'Probe NOTIFYs that did not come back in time.', () => health.stats().probeFailures);
  counter('lazarus_change_feed_catch_ups_total', 'Catch-up reads after the listener (re)connected.', () => feed.stats().catchUps);
  counter('lazarus_change_feed_published_total', 'Changes read and published to subscribers.', () => feed.stats().published);
  gauge('lazarus_listener_connected', '1 while the LISTEN connection is up.', () => (listener.isConnected() ? 1 : 0));
  gauge('lazarus_change_feed_degraded', '1 while NOTIFY does not reach the listener and the feed polls instead.', () => (health.state() === 'degraded' ? 1 : 0));
  gauge('lazarus_change_feed_lag_seconds', 'Seconds since the oldest hint whose changes are not published yet (0 when caught up).', () => feed.stats().lagSeconds);
  new Gauge({
    name: 'lazarus_change_horizon_lag_seconds',
    help: 'Age of the oldest open transaction in this database that has written (or holds an xid): the live feed delivers nothing committed after it began until it ends.',
    registers: [registry],
    async collect() {
      this.set(await oldestWritingTransactionAgeSeconds(db));
    },
  });
  gauge('lazarus_live_subscriptions', 'Open subscriptions on the change feed in this process.', () => feed.events.listenerCount());
}
