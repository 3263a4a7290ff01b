import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import type { BridgeBoard } from '../workers/bridges/bridgeBoard.ts';
import { createGraphQLError, createYoga, maskError, useReadinessCheck, type YogaServerInstance } from 'graphql-yoga';
import type { Authenticate } from './auth/principal.ts';
import { useHttpAuthStatus } from './auth/useHttpAuthStatus.ts';
import { withGraphiQLStyle } from './http/console.ts';
import { useOriginCheck } from './http/origin.ts';
import { classifyDatabaseError, type Db } from '../reads/db.ts';
import { DEFAULT_MAX_BODY_BYTES, type Config } from '../config.ts';
import { DEFAULT_WRITE_CONFIG, type WriteConfig } from '../domain/writeConfig.ts';
import type { LiveFeed } from '../live/liveEvents.ts';
import type { Logger } from '../logger.ts';
import type { GraphQLContext } from './schema/builder.ts';
import { requestLimitPlugins } from './requestLimits.ts';
import { EXAMPLE_OPERATIONS } from './examples.ts';
import { useExactJsonBody } from './exactJsonBody.ts';
import { useMutationRateLimit } from './rateLimit.ts';
import { useInputErrorCodes } from './inputErrorCodes.ts';
import { useTextInputGuard } from './useTextInputGuard.ts';
import { schema } from './schema/schema.ts';
import { createSseFanOut, useSharedSseFrames } from './sseFanOut.ts';
import { useSharedSubscriptionResults } from './useSharedSubscriptionResults.ts';

export interface GraphQLServerDeps {
  db: Db;
  logger: Logger;
  /** Serve GraphiQL (with local assets, no CDN) on GET /graphql. */
  graphiql: boolean;
  /** GraphiQL's page; default Yoga's, which inlines all its script. */
  renderGraphiQL?: (options?: object) => string;
  /** Who is calling; null rejects the request's operations with UNAUTHENTICATED. */
  authenticate: Authenticate;
  /** Introspection, the allow-list of other origins (CORS and the Origin check) and body caps (see src/api/requestLimits.ts). */
  http?: Partial<Config['http']>;
  /** Readiness: resolves true when the service can serve (database reachable and migrated). */
  isReady: () => Promise<boolean | Response>;
  /** Write-side settings; DEFAULT_WRITE_CONFIG when absent. */
  writeConfig?: WriteConfig;
  /** The change feed behind subscriptions; without it subscribing fails with SERVICE_UNAVAILABLE. */
  live?: LiveFeed;
  /** The broker bridges (`bridges`, pauseBridge/resumeBridge); none when absent. */
  bridges?: BridgeBoard;
  /** Event types the process's in-process handlers deliver (they are not held without a target). */
  inProcessEventTypes?: readonly string[];
}

export type GraphQLServer = YogaServerInstance<Record<string, never>, GraphQLContext>;

const DATABASE_TROUBLE_ERRORS = {
  unavailable: () =>
    createGraphQLError('the database is unavailable; try again shortly', {
      extensions: { code: 'SERVICE_UNAVAILABLE', http: { status: 503, headers: { 'retry-after': '5' } } },
    }),
  timeout: () =>
    createGraphQLError('the database took too long to answer; narrow the query or try again', {
      extensions: { code: 'DATABASE_TIMEOUT', http: { status: 503 } },
    }),
};

/** Mutations allowed to send bodies above the ordinary cap. */
export const BATCH_OPERATIONS = ['recordDeadLetters'] as const;

export function createGraphQLServer(deps: GraphQLServerDeps): GraphQLServer {
  // Defaults for embedding and tests; the service passes the validated Config values.
  const http = { introspection: true, corsOrigins: [], maxBodyBytes: DEFAULT_MAX_BODY_BYTES, mutationsPerMinute: 0, ...deps.http };
  // The database being down or slow is reported as such (retryable, coded); anything else
  // unexpected reaches clients as "Unexpected error." and is logged once, here.
  const maskResultError = (error: unknown, message: string, isDev?: boolean): Error => {
    // Errors thrown in plugin hooks (e.g. the rate limiter's count) arrive unwrapped.
    const original = (error as { originalError?: unknown }).originalError ?? error;
    const trouble = classifyDatabaseError(original);
    if (trouble) {
      deps.logger.warn({ err: (original as Error).message, trouble }, 'database trouble while resolving');
      return DATABASE_TROUBLE_ERRORS[trouble]();
    }
    if (original && !(original as { extensions?: unknown }).extensions) {
      deps.logger.error({ err: original }, 'unexpected error while resolving');
    }
    return maskError(error, message, isDev);
  };
  // SSE subscribers of the same operation share one execution and the same bytes.
  const fanOut = createSseFanOut({ maskError: maskResultError, maxQueuedEvents: deps.live?.maxQueuedEvents ?? 10_000, logger: deps.logger });
  return createYoga<Record<string, never>, GraphQLContext>({
    schema,
    context: ({ request }) => ({
      db: deps.db,
      principal: deps.authenticate(request),
      writeConfig: deps.writeConfig ?? DEFAULT_WRITE_CONFIG,
      live: deps.live,
      bridges: deps.bridges,
      inProcessEventTypes: deps.inProcessEventTypes ?? [],
    }),
    logging: deps.logger.child({ component: 'graphql' }),
    maskedErrors: { maskError: maskResultError },
    landingPage: false,
    // requestLimits.ts enforces the same absolute cap without counting bodies of declared length.
    maxRequestBodySize: false,
    healthCheckEndpoint: '/health',
    graphiql: deps.graphiql
      ? { title: 'Lazarus', defaultTabs: EXAMPLE_OPERATIONS.map((op) => ({ query: op.query, variables: op.variables ?? null })) }
      : false,
    renderGraphiQL: withGraphiQLStyle(deps.renderGraphiQL ?? renderGraphiQL),
    // No cross-origin access unless origins are listed; bearer tokens, so never credentials.
    cors: http.corsOrigins.length ? { origin: [...http.corsOrigins], credentials: false, methods: ['GET', 'POST'] } : false,
    plugins: [
      useOriginCheck(http.corsOrigins),
      ...requestLimitPlugins({
        introspection: http.introspection,
        hideSuggestions: !http.introspection,
        maxBodyBytes: http.maxBodyBytes,
        batchOperations: BATCH_OPERATIONS,
      }),
      useExactJsonBody(),
      useMutationRateLimit(http.mutationsPerMinute),
      useReadinessCheck({ endpoint: '/ready', check: deps.isReady }),
      useHttpAuthStatus(deps.authenticate),
      useInputErrorCodes(),
      useTextInputGuard(),
      useSharedSubscriptionResults(fanOut),
      useSharedSseFrames(fanOut),
    ],
  });
}
