import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * graphql-js reports a variable that does not fit its type (an unknown enum value, a string for
 * an Int, a bad DateTime) with no error code. Clients branch on codes, so these get BAD_USER_INPUT
 * like every other input problem.
 */
export function useInputErrorCodes(): Plugin {
  return {
    onExecute: () => ({
      onExecuteDone: ({ result, setResult }) => {
        if (Symbol.asyncIterator in result || !result.errors?.length) return;
        if (!result.errors.some(isVariableError)) return;
        setResult({
          ...result,
          errors: result.errors.map((error) =>
            isVariableError(error)
              ? new GraphQLError(error.message, { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path, originalError: error.originalError, extensions: { ...error.extensions, code: 'BAD_USER_INPUT' } })
              : error,
          ),
        });
      },
    }),
  };
}

function isVariableError(error: GraphQLError): boolean {
  return error.extensions?.code === undefined && error.path === undefined && error.message.startsWith('Variable "$');
}
