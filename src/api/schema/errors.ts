import { createGraphQLError } from 'graphql-yoga';
import { PageArgumentError } from '../../reads/pageCursor.ts';

/** A request-level problem the client can fix (bad id, bad cursor, bad range): never a 500. */
export function badUserInput(message: string, extensions: Record<string, unknown> = {}) {
  return createGraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', ...extensions } });
}

/** Runs a page read, answering a bad paging argument (cursor, size) as BAD_USER_INPUT naming it. */
export async function pageArgumentsAsBadInput<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof PageArgumentError) throw badUserInput(error.message, { argument: error.argument });
    throw error;
  }
}
