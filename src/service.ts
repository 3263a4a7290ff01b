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
import { serveMetrics } from './api/http/metrics.ts';
import { attachGraphQLWebSocket } from './api/webSocket.ts';
import { createLivePubSub } from './live/liveEvents.ts';
import { createChangeFeed } from './live/changeFeed.ts';
import { createChangeListener } from './live/changeListener.ts';
import { createListenerHealth } from './live/listenerHealth.ts';
import { registerLiveMetrics } from './live/liveMetrics.ts';
import type { Logger } from './logger.ts';
import { createRetryMetrics } from './workers/retry/metrics.ts';
import type { RetryServiceOptions } from './workers/retry/startRetryService.ts';
import { listJobs, type RunningJob } from './workers/jobs.ts';
import { BridgeDeclarationError, createBridgeBoard, resolveBridges } from './workers/bridges/bridgeBoard.ts';
import { registerBridgeMetrics } from './workers/bridges/bridgeMetrics.ts';
import { BRIDGE_KINDS } from './workers/bridges/registry.ts';
import { isConsoleRequest, openConsoleSite } from './api/http/console.ts';
import { countAppliedMigrations, notify } from './db/sql/serviceChecks.ts';

/** A start-up failure with a message meant for the operator, printed as one line. */
export class StartupError extends Error {
  override name = 'StartupError';
}

export interface RunningService {
  /** Base URL of the HTTP server, e.g. http://127.0.0.1:4000 */
  url: string;
  /** The operator console's URL (`url` + `/`), or null when no built console was found. */
  consoleUrl: string | null;
  databaseUrl: string;
  /** The background jobs running, by name (workers/jobs.ts), for their awaitable events. */
  jobs: ReadonlyMap<string, RunningJob>;
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
      logger.warn({ host: config.host, loopback: isLoopbackHost(config.host) }, config.allowInsecure
        ? 'no API keys configured (LAZARUS_API_KEYS) and LAZARUS_ALLOW_INSECURE: every caller is the local admin'
        : 'no API keys configured (LAZARUS_API_KEYS): every caller that addresses the service as localhost, 127.x or [::1] is the local admin');
    } else {
      logger.info({ keys: config.apiKeys.map((k) => ({ name: k.name, role: k.role })) }, 'API keys loaded');
    }
    // Bridges are checked before anything starts: a bad declaration is one line, and nothing runs.
    let bridges;
    try {
      bridges = resolveBridges(config.bridges, BRIDGE_KINDS);
    } catch (error) {
      if (error instanceof BridgeDeclarationError) throw new StartupError(error.message, { cause: error });
      throw error;
    }
    const bridgeBoard = createBridgeBoard(bridges);
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPgPort, logger });
      undo.push(() => embedded.stop());
      databaseUrl = embedded.url;
    }

    await migrate(databaseUrl, { logger, ddlLockTimeoutMs: config.migrations.lockTimeoutMs, ddlRetryForMs: config.migrations.retryForMs }).catch((error: unknown) => {
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
      notify: (channel, payload) => notify(api.db, channel, payload),
    });
    await health.start();
    undo.push(() => health.stop());

    const authenticate = createApiKeyAuthenticator(config.apiKeys, { allowInsecure: config.allowInsecure });
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
      bridges: bridgeBoard,
      inProcessEventTypes: [...(options.handlers?.keys() ?? [])],
      isReady: async () => {
        const state = health.state();
        if (state === 'disconnected' || state === 'starting') return false;
        if ((await countAppliedMigrations(api.db, migrationNames)) !== migrationNames.length) return false;
        // Still serving, with subscriptions fed by polling: ready, but saying so.
        if (state === 'degraded') return Response.json({ status: 'degraded', reason: 'NOTIFY does not reach the listener; the change feed polls' });
        return true;
      },
    });
    undo.push(async () => yoga.dispose());

    const metrics = createRetryMetrics(api.db, { maxEventTypes: config.metrics.maxEventTypes });
    metrics.setDeliverySlots(config.retry.enabled ? config.retry.concurrency : 0);
    registerLiveMetrics(metrics.registry, { db: api.db, listener, feed, health });
    registerBridgeMetrics(metrics.registry, bridgeBoard);
    const jobs = new Map<string, RunningJob>();
    const jobList = listJobs({ config, databaseUrl, db: api.db, listener, logger, outage, metrics, retry: options, bridges: { list: bridges, board: bridgeBoard } });
    for (const job of jobList) {
      if (!job.isEnabled) continue;
      const running = job.start();
      jobs.set(job.name, running);
      undo.push(() => running.stop());
    }
    // What runs in the background and what moves it, once at start-up (the on-call question "is
    // retention even on here?"): each job's schedule, its wake-up channel, and the ones switched off.
    logger.info({
      jobs: jobList.filter((j) => j.isEnabled).map((j) => ({ name: j.name, everyMs: j.everyMs, ...(j.wakeChannel && { wakeChannel: j.wakeChannel }) })),
      disabled: jobList.filter((j) => !j.isEnabled).map((j) => j.name),
    }, 'background jobs started');

    const handleGraphQL = limitRequestBody(yoga, config.http.maxBatchBodyBytes);
    const handleMetrics = serveMetrics({ registry: metrics.registry, authenticate, logger });
    const server = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/metrics') return handleMetrics(req, res);
      if (site && isConsoleRequest(req)) return site.handle(req, res);
      handleGraphQL(req, res);
    });
    server.requestTimeout = 60_000;
    server.headersTimeout = 15_000;
    await listen(server, config.port, config.host);
    undo.push(() => closeServer(server));
    const webSocket = attachGraphQLWebSocket({ server, yoga, authenticate, allowedOrigins: config.http.corsOrigins, logger });
    undo.push(() => webSocket.close());
    const { port } = server.address() as AddressInfo;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const url = `http://${host}:${port}`;
    return { url, consoleUrl: site ? `${url}/` : null, databaseUrl, jobs, close };
  } catch (error) {
    await close();
    throw error;
  }
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
