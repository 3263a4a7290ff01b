// Every piece of background work the service runs, in one list. service.ts starts the enabled ones
// in this order (after the change feed, before HTTP) and stops them in reverse on shutdown.
// A new periodic job is one entry here (periodicJob({ name, everyMs, runOnce })) plus its test.
// Not listed: the change feed's own plumbing, which lives and dies with the listener (the listener
// heartbeat in live/listenerHealth.ts); it runs on the same startPeriodic.
import type { EventEmitter } from 'node:events';
import type { Config } from '../config.ts';
import type { Db } from '../db/createDb.ts';
import type { OutageLog } from '../db/outageLog.ts';
import { resumingDeliveryCompaction } from '../domain/deliveryRollups.ts';
import { resumingCompactions } from '../domain/statsRollups.ts';
import { DEFAULT_FOLD_INTERVAL_MS, sizedFolds } from '../domain/errorGroupFolding.ts';
import type { ChangeListener } from '../live/changeListener.ts';
import { ALERTS_CHANNEL, CHANGES_CHANNEL } from '../live/channels.ts';
import type { Logger } from '../logger.ts';
import { startPeriodic, type PeriodicOptions } from '../runtime/periodic.ts';
import { evaluateAlertRules } from './alertEvaluation.ts';
import type { Bridge, BridgeBoard } from './bridges/bridgeBoard.ts';
import { DEFAULT_BRIDGE_POLL_INTERVAL_MS, startBridge } from './bridges/runBridge.ts';
import { DEFAULT_REDRIVE_POLL_INTERVAL_MS, startRedriveRunner } from './redriveRunner.ts';
import { RETENTION_INTERVAL_MS, startRetention } from './retention.ts';
import { DEFAULT_ALERT_POLL_INTERVAL_MS, startAlertDelivery } from './retry/alertDelivery.ts';
import type { RetryMetrics } from './retry/metrics.ts';
import { startRetryService, type RetryServiceOptions } from './retry/startRetryService.ts';

export interface JobDeps {
  config: Config;
  databaseUrl: string;
  /** The API's database handle (the retry loop opens its own pool). */
  db: Db;
  listener: ChangeListener;
  logger: Logger;
  outage: OutageLog;
  metrics: RetryMetrics;
  retry: RetryServiceOptions;
  /** The declared broker bridges (LAZARUS_BRIDGES), checked at start-up, and where they report. */
  bridges?: { list: readonly Bridge[]; board: BridgeBoard };
}

export interface RunningJob {
  /** The job's awaitable events: `runCompleted` for periodic jobs, `passCompleted` for work loops. */
  readonly events: EventEmitter;
  stop(): Promise<void>;
}

export interface Job {
  name: string;
  isEnabled: boolean;
  /** How often it runs, or polls, when nothing wakes it. */
  everyMs: number;
  /** The NOTIFY channel whose hints wake it early, or null: its timer alone moves it. */
  wakeChannel: string | null;
  start(): RunningJob;
}

/** The service's jobs, enabled or not, in start order. */
export function listJobs(d: JobDeps): Job[] {
  const { config, db, logger, outage } = d;
  const retentionMs = config.retry.retentionDays * 86_400_000;
  return [
    {
      name: 'redrive runner', isEnabled: true, everyMs: DEFAULT_REDRIVE_POLL_INTERVAL_MS, wakeChannel: null,
      start: () => startRedriveRunner({ db, logger, outage }),
    },
    // An uncompacted ledger is only slower to read, never wrong: a failed run waits for the next.
    periodicJob(d, { name: 'rollup compaction', everyMs: 60_000, runOnce: resumingCompactions(db) }),
    // The delivery charts' ledger: folded like the rollups, minutes past two hours folded into the
    // day chart's steps, and minutes past two days dropped.
    periodicJob(d, { name: 'delivery rollup compaction', everyMs: 60_000, runOnce: resumingDeliveryCompaction(db) }),
    // Error groups trail their members by the fold delay: a tick, or at once after a hint (the
    // producer's NOTIFY arrives after its commit, so its ledger rows are visible).
    periodicJob(d, {
      name: 'error group folding', everyMs: DEFAULT_FOLD_INTERVAL_MS, wakeChannel: CHANGES_CHANNEL, wakeGapMs: 20,
      wake: wakeOnDeadLetterHints(d.listener), immediately: true,
      runOnce: sizedFolds(db),
    }),
    {
      // The change feed's hints wake the loop at once; its own timer still polls without them.
      name: 'retry loop', isEnabled: config.retry.enabled, everyMs: config.retry.pollIntervalMs, wakeChannel: CHANGES_CHANNEL,
      start: () => {
        const wake = d.retry.wake ?? wakeOnDeadLetterHints(d.listener);
        const retry = startRetryService(d.databaseUrl, config, logger, { ...d.retry, wake, metrics: d.metrics, outage });
        return { events: retry.loop.events, stop: () => retry.stop() };
      },
    },
    {
      // Alerts go out where deliveries do. Each raise NOTIFYs lazarus_alerts at commit.
      name: 'alert delivery', isEnabled: config.retry.enabled, everyMs: DEFAULT_ALERT_POLL_INTERVAL_MS, wakeChannel: ALERTS_CHANNEL,
      start: () => startAlertDelivery({ db, logger, outage, wake: (fn) => wakeOnAlerts(d.listener, fn) }),
    },
    // Every instance may evaluate: the raise is throttled per rule in the database.
    periodicJob(d, {
      name: 'alert evaluation', isEnabled: config.alerts.evaluateIntervalMs > 0, everyMs: config.alerts.evaluateIntervalMs, immediately: true,
      runOnce: () => evaluateAlertRules(db),
      onError: (error) => outage.failed(error, 'alert evaluation failed; it runs again at the next tick'),
    }),
    // One job per declared bridge: a broker's dead letters in, acked after commit (workers/bridges).
    ...(d.bridges?.list ?? []).map((bridge): Job => ({
      name: `bridge ${bridge.name}`, isEnabled: true, everyMs: DEFAULT_BRIDGE_POLL_INTERVAL_MS, wakeChannel: null,
      start: () => startBridge({
        bridge, board: d.bridges!.board, db, logger, outage, rules: config.writes, shutdownTimeoutMs: config.shutdownTimeoutMs,
      }),
    })),
    {
      name: 'retention', isEnabled: retentionMs > 0, everyMs: RETENTION_INTERVAL_MS, wakeChannel: null,
      start: () => startRetention({ db, logger, outage, olderThanMs: retentionMs }),
    },
  ];
}

type PeriodicJobOptions = Omit<PeriodicOptions, 'logger'> & { isEnabled?: boolean; wakeChannel?: string };

/** A job on the one periodic shape (runtime/periodic.ts); enabled unless said otherwise. */
function periodicJob(d: JobDeps, { isEnabled = true, wakeChannel, ...o }: PeriodicJobOptions): Job {
  return { name: o.name, isEnabled, everyMs: o.everyMs, wakeChannel: wakeChannel ?? null, start: () => startPeriodic({ ...o, logger: d.logger }) };
}

/** Wake-ups from the change listener's hints about dead_letters. */
function wakeOnDeadLetterHints(listener: ChangeListener): (fn: () => void) => () => void {
  return (fn) => {
    let active = true;
    listener.onHint((hint) => {
      if (active && hint.table === 'dead_letters') fn();
    });
    return () => {
      active = false;
    };
  };
}

/**
 * Wake-ups of the alert deliverer: each `lazarus_alerts` NOTIFY, and each time the LISTEN connection
 * is (re)established, since a NOTIFY sent while it was down is lost (the poll would find the alert
 * up to a poll interval later).
 */
export function wakeOnAlerts(listener: ChangeListener, fn: () => void): () => void {
  let active = true;
  const wake = () => {
    if (active) fn();
  };
  listener.onAlertsRaised(wake);
  listener.onConnected(wake);
  return () => {
    active = false;
  };
}
