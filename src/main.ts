// Entry point: config → logger → service; signals shut everything down in reverse order.
// A start-up failure prints one line and exits non-zero; nothing is left running.
import { ConfigError, loadConfig, type Config } from './config.ts';
import { EmbeddedPostgresError } from './db/embedded.ts';
import { MigrationError } from './db/migrate.ts';
import { createLogger } from './logger.ts';
import { startService, StartupError } from './service.ts';

const EXPECTED_STARTUP_ERRORS = [ConfigError, StartupError, MigrationError, EmbeddedPostgresError];

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  process.stderr.write(`lazarus: ${(error as Error).message}\n`);
  process.exit(2);
}

const logger = createLogger(config);

// The event loop runs dry only if start-up waits on something that can no longer happen; Node would
// then exit 13 ("unsettled top-level await") without a word.
const stalled = () => {
  logger.fatal('cannot start: start-up was left waiting on something that cannot happen (a bug in Lazarus)');
  process.exit(1);
};
process.once('beforeExit', stalled);

try {
  const service = await startService(config, logger);
  process.off('beforeExit', stalled);
  logger.info(
    { url: service.url, console: service.consoleUrl, graphiql: config.graphiqlEnabled, embedded: !config.databaseUrl },
    runningLine(service.url, service.consoleUrl, config.graphiqlEnabled),
  );
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + 5_000);
    force.unref();
    service.close().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
} catch (error) {
  if (EXPECTED_STARTUP_ERRORS.some((type) => error instanceof type)) {
    logger.fatal(`cannot start: ${(error as Error).message}`);
  } else {
    logger.fatal({ err: error }, 'cannot start: unexpected error');
  }
  process.exit(1);
}

function runningLine(url: string, consoleUrl: string | null, graphiql: boolean): string {
  const api = graphiql ? `GraphiQL at ${url}/graphql` : `GraphQL at ${url}/graphql`;
  return consoleUrl ? `Lazarus is running: open the console at ${consoleUrl} (${api})` : `Lazarus is running: ${api} (no built console)`;
}
