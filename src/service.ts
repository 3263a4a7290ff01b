// Composition: database (external or embedded) → migrations → pool + Prisma → GraphQL → HTTP.
// Every step registers its own undo, so a failure half-way stops what already started.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { authStartupProblem, createApiKeyAuthenticator, isLoopbackHost } from './api/auth/apiKeys.ts';
import type { Config } from './config.ts';
import { createDb } from './db/createDb.ts';
import { startEmbeddedPostgres } from './db/embedded.ts';
import { describeConnectionError, isConnectionError } from './db/errors.ts';
import { migrate, readMigrations } from './db/migrate.ts';
import { createOutageLog } from './db/outageLog.ts';
import { createGraphQLServer } from './api/server.ts';
import { limitRequestBody } from './api/http/bodyLimit.ts';
import { startRedriveRunner } from './workers/redriveRunner.ts';
import { attachGraphQLWebSocket } from './api/webSocket.ts';
import { createLivePubSub } from './live/liveEvents.ts';
import { createChangeFeed } from './live/changeFeed.ts';
import { createChangeListener, type ChangeListener } from './live/changeListener.ts';
import { createListenerHealth } from './live/listenerHealth.ts';
import { createErrorGroupChangeSource, errorGroupHints } from './live/errorGroupChanges.ts';
import { registerLiveMetrics } from './live/liveMetrics.ts';
import type { Logger } from './logger.ts';
import { createRetryMetrics } from './workers/retry/metrics.ts';
import { compactRollups } from './domain/statsRollups.ts';
import { DEFAULT_FOLD_INTERVAL_MS, foldErrorGroupLedger } from './domain/errorGroupFolding.ts';
import { startPeriodic } from './workers/periodic.ts';
import { startRetryService, type RetryServiceOptions } from './workers/retry/startRetryService.ts';
import { startAlertDelivery } from './workers/retry/alertDelivery.ts';
import { startAlertEvaluation } from './workers/alertEvaluation.ts';
import { isConsoleRequest, openConsoleSite } from './api/http/console.ts';
import { countAppliedMigrations, notify } from './db/sql/serviceChecks.ts';

/** A start-up failure with a message meant for the operator, printed as one line. */
export class StartupError extends Error {
  override name = 'StartupError';
}

export interface RunningService {
  /** Base URL of the HTTP server, e.g. http://127.0.0.1:4000 */
  url: string;
  databaseUrl: string;
  close(): Promise<void>;
}

export async function startService(config: Config, logger: Logger, options: RetryServiceOptions = {}): Promise<RunningService> {
  const undo: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const step of undo.reverse().splice(0)) {
      await step().catch((error: unknown) => logger.warn({ err: error }, 'error during shutdown'));
    }
  };
  try {
    const authProblem = authStartupProblem({ keyCount: config.apiKeys.length, host: config.host, allowInsecure: config.allowInsecure });
    if (authProblem) throw new StartupError(authProblem);
    if (config.apiKeys.length === 0) {
      logger.warn({ host: config.host, loopback: isLoopbackHost(config.host) },
        'no API keys configured (LAZARUS_API_KEYS): every caller is the local admin');
    } else {
      logger.info({ keys: config.apiKeys.map((k) => ({ name: k.name, role: k.role })) }, 'API keys loaded');
    }
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPgPort, logger });
      undo.push(() => embedded.stop());
      databaseUrl = embedded.url;
    }

    await migrate(databaseUrl, { logger }).catch((error: unknown) => {
      if (isConnectionError(error)) throw new StartupError(describeConnectionError(databaseUrl, error), { cause: error });
      throw error;
    });
    const migrationNames = (await readMigrations()).map((m) => m.name);

    // One outage, one line: every loop below reports database trouble here.
    const outage = createOutageLog(logger);
    const api = createDb(databaseUrl, {
      ...config.db,
      applicationName: 'lazarus-api',
      onIdleError: (error) => outage.failed(error, 'an idle API database connection broke'),
    });
    undo.push(() => api.close());

    // The feed registers its handlers and takes its cursor before LISTEN starts; the listener's
    // first `connected` then triggers the first catch-up.
    const listener = createChangeListener({ url: databaseUrl, logger, outage });
    const feed = createChangeFeed({ db: api.db, listener, events: createLivePubSub(), logger, outage, fallbackPollMs: config.live.pollMs });
    await feed.start();
    undo.push(() => feed.stop());
    await listener.start();
    undo.push(() => listener.stop());
    // Start-up self-probe, then a heartbeat: NOTIFY must really reach the LISTEN session.
    const health = createListenerHealth({
      listener,
      feed,
      logger,
      normalPollMs: config.live.pollMs,
      notify: (channel, payload) => notify(api.pool, channel, payload),
    });
    await health.start();
    undo.push(() => health.stop());

    // errorGroupChanged: one reader for every subscriber, woken by the error_groups NOTIFY.
    const errorGroupChanges = createErrorGroupChangeSource({ db: api.db, logger, wake: errorGroupHints(listener) });
    undo.push(() => errorGroupChanges.close());

    const authenticate = createApiKeyAuthenticator(config.apiKeys);
    const site = openConsoleSite(config.consoleDir);
    if (!site) logger.warn({ dir: config.consoleDir }, 'no built console there: run `npm run build:web`; serving the API only');
    const yoga = createGraphQLServer({
      db: api.db,
      logger,
      graphiql: config.graphiqlEnabled,
      renderGraphiQL: site?.renderGraphiQL ?? undefined,
      http: config.http,
      authenticate,
      writeConfig: config.writes,
      live: feed,
      errorGroupChanges,
      isReady: async () => {
        const state = health.state();
        if (state === 'disconnected' || state === 'starting') return false;
        if ((await countAppliedMigrations(api.pool, migrationNames)) !== migrationNames.length) return false;
        // Still serving, with subscriptions fed by polling: ready, but saying so.
        if (state === 'degraded') return Response.json({ status: 'degraded', reason: 'NOTIFY does not reach the listener; the change feed polls' });
        return true;
      },
    });
    undo.push(async () => yoga.dispose());

    const redrives = startRedriveRunner({ db: api.db, logger, outage });
    undo.push(() => redrives.stop());

    // An uncompacted ledger is only slower to read, never wrong: a failed run waits for the next.
    const rollups = startPeriodic({ name: 'rollup compaction', everyMs: 60_000, runOnce: () => compactRollups(api.db), logger });
    undo.push(() => rollups.stop());

    // Error groups trail their members by the fold delay: a tick, or at once after a hint (the
    // producer's NOTIFY arrives after its commit, so its ledger rows are visible).
    const groupFolding = startPeriodic({
      name: 'error group folding',
      everyMs: DEFAULT_FOLD_INTERVAL_MS,
      wakeGapMs: 20,
      wake: wakeOnDeadLetterHints(listener),
      immediately: true,
      runOnce: (signal) => foldErrorGroupLedger(api.db, { signal }),
      logger,
    });
    undo.push(() => groupFolding.stop());

    const metrics = createRetryMetrics(api.db, { maxEventTypes: config.metrics.maxEventTypes });
    metrics.setDeliverySlots(config.retry.enabled ? config.retry.concurrency : 0);
    registerLiveMetrics(metrics.registry, { db: api.db, listener, feed, health });
    if (config.retry.enabled) {
      // The change feed's hints wake the loop at once; its own timer still polls without them.
      const wake = options.wake ?? wakeOnDeadLetterHints(listener);
      const retry = startRetryService(databaseUrl, config, logger, { ...options, wake, metrics, outage });
      undo.push(() => retry.stop());
      // Alerts go out where deliveries do. Each raise NOTIFYs lazarus_alerts at commit, which wakes
      // the deliverer at once; it also polls every second.
      const alerts = startAlertDelivery({ db: api.db, logger, outage, wake: (fn) => wakeOnAlerts(listener, fn) });
      undo.push(() => alerts.stop());
      const evaluation = startAlertEvaluation({ db: api.db, logger, everyMs: config.alerts.evaluateIntervalMs, outage });
      undo.push(() => evaluation.stop());
    }

    const handleGraphQL = limitRequestBody(yoga, config.http.maxBatchBodyBytes);
    const server = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/metrics') {
        metrics.registry.metrics().then(
          (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
          (error: unknown) => {
            logger.error({ err: error }, 'collecting metrics failed');
            res.writeHead(503).end();
          },
        );
        return;
      }
      if (site && isConsoleRequest(req)) return site.handle(req, res);
      handleGraphQL(req, res);
    });
    server.requestTimeout = 60_000;
    server.headersTimeout = 15_000;
    await listen(server, config.port, config.host);
    undo.push(() => closeServer(server));
    const webSocket = attachGraphQLWebSocket({ server, yoga, authenticate, logger });
    undo.push(() => webSocket.close());
    const { port } = server.address() as AddressInfo;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    return { url: `http://${host}:${port}`, databaseUrl, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Wake-ups for the retry loop from the change listener's hints about dead_letters. */
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

function wakeOnAlerts(listener: ChangeListener, fn: () => void): () => void {
  let active = true;
  listener.onAlertsRaised(() => {
    if (active) fn();
  });
  return () => {
    active = false;
  };
}

async function listen(server: Server, port: number, host: string): Promise<void> {
  server.listen(port, host);
  try {
    await once(server, 'listening');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new StartupError(`port ${port} on ${host} is already in use; set PORT to a free port`, { cause: error });
    if (code === 'EADDRNOTAVAIL') throw new StartupError(`cannot listen on ${host}: no such local address; check HOST`, { cause: error });
    if (code === 'EACCES') throw new StartupError(`not allowed to listen on ${host}:${port}; use a port above 1023`, { cause: error });
    throw error;
  }
}

async function closeServer(server: Server): Promise<void> {
  const closed = once(server, 'close');
  server.close();
  // Keep-alive and streaming connections would hold close() open; idle ones go now, the rest shortly.
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), 2_000);
  await closed;
  clearTimeout(timer);
}
