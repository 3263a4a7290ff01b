// While PostgreSQL is down, every loop of the service (retry passes, redrive polls, feed reads, the
// listener's reconnects) fails once a second or more. Those failures are one event, an outage: it
// is logged once when it starts and once when the database answers again. Other errors are logged
// every time, as before.
import type { Logger } from '../logger.ts';
import { classifyDatabaseError, isConnectionError } from './errors.ts';

export interface OutageLog {
  /** Logs a failed database operation; while the database is unreachable, only the outage's first. */
  failed(error: unknown, message: string, context?: Record<string, unknown>): void;
  /** The database answered: ends an outage (logging that once). Cheap to call after every success. */
  answered(): void;
}

export function isDatabaseUnreachable(error: unknown): boolean {
  return isConnectionError(error) || classifyDatabaseError(error) === 'unavailable';
}

export function createOutageLog(logger: Pick<Logger, 'error' | 'warn' | 'info'>): OutageLog {
  let since: number | null = null;
  let suppressed = 0;
  return {
    failed(error, message, context = {}) {
      if (!isDatabaseUnreachable(error)) {
        logger.error({ ...context, err: error }, message);
        return;
      }
      if (since !== null) {
        suppressed += 1;
        return;
      }
      since = Date.now();
      suppressed = 0;
      logger.warn({ ...context, err: (error as Error)?.message ?? String(error) },
        `the database is unreachable (${message}); retrying quietly until it answers`);
    },
    answered() {
      if (since === null) return;
      logger.info({ downMs: Date.now() - since, failuresNotLogged: suppressed }, 'the database answers again');
      since = null;
    },
  };
}
