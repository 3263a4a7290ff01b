// Driver errors translated in one place. Connection failures become one line a person can act on.

interface PgLikeError {
  code?: string;
  message?: string;
  errors?: PgLikeError[];
}

const SQLSTATE_HINTS: Record<string, string> = {
  '28P01': 'password authentication failed',
  '28000': 'the server rejected this user',
  '3D000': 'the database does not exist',
  '57P03': 'the server is starting up or shutting down',
  '53300': 'the server has too many connections',
};

const ERRNO_HINTS: Record<string, string> = {
  ECONNREFUSED: 'connection refused (is PostgreSQL running and listening there?)',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
};

/** True when the error means "the database could not be reached or refused us". */
export function isConnectionError(error: unknown): boolean {
  const e = error as PgLikeError;
  return Boolean(e?.code && (e.code in ERRNO_HINTS || e.code in SQLSTATE_HINTS)) ||
    Boolean(e?.errors?.some(isConnectionError));
}

/** "cannot connect to PostgreSQL at host:port/db: reason", with the password never shown. */
export function describeConnectionError(url: string, error: unknown): string {
  const e = error as PgLikeError;
  const code = e?.code ?? e?.errors?.[0]?.code;
  const reason = (code && (ERRNO_HINTS[code] ?? SQLSTATE_HINTS[code])) ?? e?.message ?? String(error);
  return `cannot connect to PostgreSQL at ${redactUrl(url)}: ${reason}`;
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return '(unparseable URL)';
  }
}

/** How a failed query should be reported, for errors that are the database's state, not a bug. */
export type DatabaseTrouble = 'unavailable' | 'timeout';

// Prisma codes: P1001 can't reach server, P1002/P1008 timed out, P1017 server closed the
// connection, P2024 pool timeout. Adapter kinds come from @prisma/driver-adapter-utils.
const UNAVAILABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
const UNAVAILABLE_ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections', 'DatabaseDoesNotExist']);
const UNAVAILABLE_MESSAGE = /timeout exceeded when trying to connect|Connection terminated|Can't reach database server|ECONNREFUSED|ECONNRESET|the database system is (starting up|shutting down|in recovery mode)|terminating connection due to administrator command/i;

interface PrismaLikeError {
  code?: string;
  message?: string;
  meta?: { driverAdapterError?: { cause?: { kind?: string; code?: string } } };
}

/**
 * Classifies errors caused by the database being down, overloaded or slow (as opposed to bugs),
 * so the API can answer them with a coded, retryable error instead of a masked 500.
 */
export function classifyDatabaseError(error: unknown): DatabaseTrouble | undefined {
  const e = error as PrismaLikeError | undefined;
  if (!e || typeof e !== 'object') return undefined;
  const cause = e.meta?.driverAdapterError?.cause;
  const sqlState = cause?.code ?? e.code;
  if (sqlState === '57014') return 'timeout';
  if (sqlState?.startsWith('08') || sqlState === '57P01' || sqlState === '57P03' || sqlState === '53300') return 'unavailable';
  if (e.code && UNAVAILABLE_PRISMA_CODES.has(e.code)) return 'unavailable';
  if (cause?.kind && UNAVAILABLE_ADAPTER_KINDS.has(cause.kind)) return 'unavailable';
  if (e.message && UNAVAILABLE_MESSAGE.test(e.message)) return 'unavailable';
  if (e.code && e.code in ERRNO_HINTS) return 'unavailable';
  return undefined;
}

const CHECK_MESSAGES: Record<string, [string, string]> = {
  dead_letters_payload_size_check: ['payload', 'must be at most 262144 bytes as stored JSON'],
  dead_letters_headers_size_check: ['headers', 'must be a JSON object of at most 65536 bytes as stored JSON'],
  dead_letters_payload_depth_check: ['payload', 'must be nested at most 100 levels deep'],
  dead_letters_headers_depth_check: ['headers', 'must be nested at most 100 levels deep'],
  dead_letters_origin_check: ['origin', 'must be a JSON object with a lower-case string kind, at most 8192 bytes as stored JSON'],
};

/** A CHECK violation of a known dead_letters constraint as {field, message}, else null. */
export function describeCheckViolation(error: unknown): { field: string; message: string } | null {
  const text = error instanceof Error ? `${error.message} ${String((error as { cause?: unknown }).cause ?? '')}` : '';
  for (const [constraint, [field, message]] of Object.entries(CHECK_MESSAGES)) {
    if (text.includes(constraint)) return { field, message };
  }
  return null;
}
