import { pino } from 'pino';
import { LOCAL_PRINCIPAL } from '../../src/api/auth/principal.ts';
import type { Db } from '../../src/db/createDb.ts';
import { createGraphQLServer, type GraphQLServer, type GraphQLServerDeps } from '../../src/api/server.ts';

export interface GraphQLResponse<T = Record<string, unknown>> {
  data?: T | null;
  errors?: { message: string; path?: string[]; extensions?: { code?: string } & Record<string, unknown> }[];
}

/** Runs an operation in-process through the whole Yoga pipeline (parse, validate, mask). */
export async function execute<T = Record<string, unknown>>(
  server: GraphQLServer,
  query: string,
  variables: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<{ status: number; body: GraphQLResponse<T> }> {
  const response = await server.fetch('http://lazarus/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, body: (await response.json()) as GraphQLResponse<T> };
}

/** A GraphQL server on a test database: silent logs, no GraphiQL, ready, and the local admin unless overridden. */
export function testServer(db: Db, overrides: Partial<GraphQLServerDeps> = {}): GraphQLServer {
  return createGraphQLServer({
    db,
    logger: pino({ level: 'silent' }),
    graphiql: false,
    authenticate: () => LOCAL_PRINCIPAL,
    isReady: async () => true,
    ...overrides,
  });
}
