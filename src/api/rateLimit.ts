// Mutations per principal per minute, counted in the database so the limit holds across every
// instance. Over the limit a mutation is refused before it runs: HTTP 429, code RATE_LIMITED,
// with Retry-After. Queries and subscriptions are not limited here (their cost is bounded by the
// query limits in requestLimits.ts).
import { getOperationAST } from 'graphql';
import { createGraphQLError, type Plugin } from 'graphql-yoga';
import { countRequest } from '../domain/requestCounts.ts';
import type { GraphQLContext } from './schema/builder.ts';

export interface RateLimitOptions {
  /** Pins the clock that picks the one-minute window (tests); default: the database's now(). */
  now?: () => Date;
}

export function useMutationRateLimit(limitPerMinute: number, options: RateLimitOptions = {}): Plugin<GraphQLContext> {
  return {
    async onExecute({ args, setResultAndStopExecution }) {
      if (limitPerMinute <= 0) return;
      const operation = getOperationAST(args.document, args.operationName);
      const context = args.contextValue as GraphQLContext;
      if (operation?.operation !== 'mutation' || !context.principal) return;
      const { count, resetSeconds } = await countRequest(context.db, context.principal.name, options.now?.());
      if (count <= limitPerMinute) return;
      setResultAndStopExecution({
        errors: [
          createGraphQLError(`rate limit of ${limitPerMinute} mutations per minute exceeded; retry in ${resetSeconds} s`, {
            extensions: {
              code: 'RATE_LIMITED',
              retryAfterSeconds: resetSeconds,
              http: { status: 429, headers: { 'retry-after': String(resetSeconds) } },
            },
          }),
        ],
      });
    },
  };
}
