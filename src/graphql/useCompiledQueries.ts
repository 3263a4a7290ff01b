// Queries a client sends again run compiled by graphql-jit instead of graphql-js's interpreter:
// the compiled code builds plain result objects, where the interpreter's null-prototype ones are
// slow to complete and to serialise. For bench:read's 'newest 50' page that took a request from
// 0.88 to 0.70 ms p50 (in-process, tight loop). Answers must not change, so graphql-js still runs:
// - mutations: graphql-jit gives a scalar's parseLiteral no variables, which JSON inputs need.
//   Subscriptions keep their shared execution (useSharedSubscriptionResults).
// - a document's first run: compiling costs 0.5–15 ms, so a one-off query (or a stream of
//   distinct ones) is interpreted as before, and a repeated one is compiled once.
// - documents with directives: graphql-jit has had wrong answers for @skip/@include on fragment
//   spreads (zalando-incubator/graphql-jit#111, #166) and still flags that code path experimental.
// - variables that do not coerce: graphql-js's errors (and HTTP 400) name the variable and where.
// Compiled results are put in graphql-js's shape: located errors, `errors` before `data`.
// Yoga's parse cache hands out one document object per text, so the cache below, keyed by that
// object, lives as long as Yoga keeps the document; one document may hold several operations.
import { BREAK, GraphQLError, getOperationAST, getVariableValues, visit, type DocumentNode, type ExecutionArgs, type ExecutionResult, type Source } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { mapMaybePromise, type Plugin } from 'graphql-yoga';

export function useCompiledQueries(): Plugin {
  const compiled = new WeakMap<DocumentNode, Map<string, CompiledQuery | null>>();
  const compile = (args: ExecutionArgs): CompiledQuery | null => {
    if (hasDirectives(args.document)) return null;
    const result = compileQuery(args.schema, args.document, args.operationName ?? undefined);
    return isCompiledQuery(result) ? result : null;
  };
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const operation = getOperationAST(args.document, args.operationName);
      if (operation?.operation !== 'query') return;
      const byName = compiled.get(args.document);
      if (!byName) {
        compiled.set(args.document, new Map());
        return;
      }
      const interpret = executeFn;
      // Compiled and checked only when this runs: a plugin after this one (useDirectPages) may
      // answer without it, and then pays for neither the compile nor a second variable coercion.
      setExecuteFn((execution: ExecutionArgs) => {
        const name = execution.operationName ?? '';
        let query = byName.get(name);
        if (query === undefined) byName.set(name, (query = compile(execution)));
        if (!query) return interpret(execution);
        if (operation.variableDefinitions?.length) {
          if (getVariableValues(execution.schema, operation.variableDefinitions, execution.variableValues ?? {}, { maxErrors: 50 }).errors) return interpret(execution);
        }
        const source = execution.document.loc?.source;
        return mapMaybePromise(query.query(execution.rootValue, execution.contextValue, execution.variableValues), (result) => inGraphQLJsShape(result, source));
      });
    },
  };
}

export function hasDirectives(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive() {
      found = true;
      return BREAK;
    },
  });
  return found;
}

// graphql-jit's errors carry line and column but not the source positions Yoga rebuilds each
// error from, so their locations would be lost on the way out.
function inGraphQLJsShape(result: ExecutionResult, source: Source | undefined): ExecutionResult {
  if (!result.errors?.length) return result;
  const errors = result.errors.map(
    (error) =>
      new GraphQLError(error.message, {
        source,
        positions: source && error.locations?.map(({ line, column }) => offsetOf(source.body, line, column)),
        path: error.path,
        originalError: error.originalError,
        extensions: error.extensions,
      }),
  );
  const { errors: _, ...rest } = result;
  return { errors, ...rest };
}

function offsetOf(body: string, line: number, column: number): number {
  const lineStarts = [0];
  for (const match of body.matchAll(/\r\n|[\n\r]/g)) lineStarts.push(match.index + match[0].length);
  return (lineStarts[line - 1] ?? 0) + column - 1;
}
