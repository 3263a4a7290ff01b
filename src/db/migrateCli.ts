// `npm run db:migrate`: apply pending migrations once and exit. Without DATABASE_URL it migrates
// the embedded PostgreSQL in LAZARUS_DATA_DIR.
import { ConfigError, loadConfig } from '../config.ts';
import { createLogger } from '../logger.ts';
import { startEmbeddedPostgres, EmbeddedPostgresError } from './embedded.ts';
import { describeConnectionError, isConnectionError } from './errors.ts';
import { migrate, MigrationError } from './migrate.ts';

let exitCode = 0;
let stopEmbedded: (() => Promise<void>) | undefined;
const config = (() => {
  try {
    return loadConfig();
  } catch (error) {
    process.stderr.write(`lazarus: ${(error as ConfigError).message}\n`);
    process.exit(2);
  }
})();
const logger = createLogger(config);
let url = config.databaseUrl;
try {
  if (!url) {
    const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPgPort, logger });
    stopEmbedded = embedded.stop;
    url = embedded.url;
  }
  const { applied } = await migrate(url, { logger, ddlLockTimeoutMs: config.migrations.lockTimeoutMs, ddlRetryForMs: config.migrations.retryForMs });
  logger.info({ applied }, applied.length ? `applied ${applied.length} migration(s)` : 'database is up to date');
} catch (error) {
  exitCode = 1;
  if (url && isConnectionError(error)) logger.fatal(describeConnectionError(url, error));
  else if (error instanceof MigrationError || error instanceof EmbeddedPostgresError) logger.fatal(error.message);
  else logger.fatal({ err: error }, 'migration failed');
} finally {
  await stopEmbedded?.();
}
process.exit(exitCode);
