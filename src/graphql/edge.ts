// What makes the GraphQL endpoint safe to expose: query-shape limits (depth, aliases, cost, tokens),
// CSRF prevention, introspection control, and the body cap per operation kind. The same plugins run
// for every transport that goes through Yoga's envelop.
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { useDisableIntrospection } from '@graphql-yoga/plugin-disable-introspection';
import { GraphQLError, Kind, parse, type OperationDefinitionNode } from 'graphql';
import { createGraphQLError, type Plugin } from 'graphql-yoga';

export interface EdgeOptions {
  /** Allow introspection queries (GraphiQL needs them). */
  introspection: boolean;
  /** Hide "did you mean…" field suggestions, which leak the schema when introspection is off. */
  hideSuggestions: boolean;
  /** Body cap for ordinary operations, in bytes. */
  maxBodyBytes: number;
  /** Mutations whose only root fields are these may use the larger batch body cap. */
  batchOperations: readonly string[];
}

// Limits sized for this API: the deepest real query (a page of dead letters with their attempts)
// is depth 5. Cost follows armor's model (object 2, scalar 1, ×1.5 per level, × a literal
// `first`/`last`): a full 500-row page of ~15 fields costs ≈ 30,000, the same page with every
// node's attempts nested costs several times more. GraphiQL's introspection query is exempt.
export const QUERY_LIMITS = { maxDepth: 8, maxAliases: 10, maxCost: 50_000, maxTokens: 2000, maxDirectives: 20 } as const;

// Plugins are context-agnostic, so they are typed for any server context.
type EdgePlugin = Plugin<Record<string, unknown>>;

export function edgePlugins(options: EdgeOptions): EdgePlugin[] {
  return [
    EnvelopArmorPlugin({
      maxDepth: { n: QUERY_LIMITS.maxDepth, onReject: [withCode] },
      maxAliases: { n: QUERY_LIMITS.maxAliases, onReject: [withCode] },
      costLimit: { maxCost: QUERY_LIMITS.maxCost, onReject: [withCode] },
      maxTokens: { n: QUERY_LIMITS.maxTokens },
      maxDirectives: { n: QUERY_LIMITS.maxDirectives, onReject: [withCode] },
      blockFieldSuggestion: { enabled: options.hideSuggestions },
    }) as EdgePlugin,
    useCSRFPrevention({ requestHeaders: ['x-graphql-yoga-csrf'] }) as EdgePlugin,
    ...(options.introspection ? [] : [useDisableIntrospection<Record<string, unknown>>()]),
    useOperationBodyCap(options),
  ];
}

// graphql-armor throws its rejections as bare GraphQLErrors; clients branch on codes, so each
// gets the code Yoga gives its own validation errors (the error is thrown right after this).
function withCode(_context: unknown, error: GraphQLError): void {
  (error.extensions as Record<string, unknown>).code = 'GRAPHQL_VALIDATION_FAILED';
}

/** A body over the ordinary cap is only accepted for batch-ingest mutations. */
function useOperationBodyCap(options: EdgeOptions): EdgePlugin {
  return {
    onParams({ request, params, setResult }) {
      const length = Number(request.headers.get('content-length') ?? 0);
      if (length <= options.maxBodyBytes) return;
      if (isBatchOnly(params.query, options.batchOperations)) return;
      setResult({
        errors: [
          createGraphQLError(`request body exceeds ${options.maxBodyBytes} bytes (only ${options.batchOperations.join(', ')} may send more)`, {
            extensions: { code: 'PAYLOAD_TOO_LARGE', http: { status: 413 } },
          }),
        ],
      });
    },
  };
}

function isBatchOnly(query: string | undefined, allowed: readonly string[]): boolean {
  if (!query) return false;
  try {
    const operations = parse(query).definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    return operations.every(
      (op) =>
        op.operation === 'mutation' &&
        op.selectionSet.selections.every((s) => s.kind === Kind.FIELD && allowed.includes(s.name.value)),
    );
  } catch {
    return false;
  }
}
