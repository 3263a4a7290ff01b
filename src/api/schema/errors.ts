import { createGraphQLError } from 'graphql-yoga';

/** A request-level problem the client can fix (bad id, bad cursor, bad range): never a 500. */
export function badUserInput(message: string, extensions: Record<string, unknown> = {}) {
  return createGraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', ...extensions } });
}
