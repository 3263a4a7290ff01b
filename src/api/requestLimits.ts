// What makes the GraphQL endpoint safe to expose: query-shape limits (depth, aliases, cost, tokens),
// CSRF prevention, introspection control, and the body cap per operation kind. The same plugins run
// for every transport that goes through Yoga's envelop.
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { useDisableIntrospection } from '@graphql-yoga/plugin-disable-introspection';
import { GraphQLError, Kind, parse, type OperationDefinitionNode } from 'graphql';
import { createGraphQLError, type FetchAPI, type Plugin } from 'graphql-yoga';

export interface RequestLimitOptions {
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

/** The absolute body cap, whatever the operation: Yoga's default, which this replaces (see useRequestBodyCap). */
export const MAX_REQUEST_BODY_BYTES = 25_000_000;

// Plugins are context-agnostic, so they are typed for any server context.
type AnyPlugin = Plugin<Record<string, unknown>>;

export function requestLimitPlugins(options: RequestLimitOptions): AnyPlugin[] {
  return [
    EnvelopArmorPlugin({
      maxDepth: { n: QUERY_LIMITS.maxDepth, onReject: [withCode] },
      maxAliases: { n: QUERY_LIMITS.maxAliases, onReject: [withCode] },
      costLimit: { maxCost: QUERY_LIMITS.maxCost, onReject: [withCode] },
      maxTokens: { n: QUERY_LIMITS.maxTokens },
      maxDirectives: { n: QUERY_LIMITS.maxDirectives, onReject: [withCode] },
      blockFieldSuggestion: { enabled: options.hideSuggestions },
    }) as AnyPlugin,
    // After armor, so it wraps armor's token-counting parser.
    useNestingGuard(),
    useCsrfPrevention(),
    ...(options.introspection ? [] : [useDisableIntrospection<Record<string, unknown>>()]),
    useRequestBodyCap(MAX_REQUEST_BODY_BYTES),
    useOperationBodyCap(options),
  ];
}

// graphql-js parses nested list and object literals by recursion. Under armor's token-counting
// lexer (a Proxy, several frames per token) a literal nested ~1,500 deep overflows the stack before
// the 2,000-token limit is reached. The overflow is cheap (~1 ms) and leaves nothing behind, so it
// is reported as the parse error it is, rather than scanning every document beforehand.
function useNestingGuard(): AnyPlugin {
  return {
    onParse({ parseFn, setParseFn }) {
      setParseFn((source, options) => {
        try {
          return parseFn(source, options);
        } catch (error) {
          if (!(error instanceof RangeError)) throw error;
          throw createGraphQLError('Syntax Error: the document is nested too deeply.', { extensions: { code: 'GRAPHQL_PARSE_FAILED' } });
        }
      });
    },
  };
}

export const CSRF_HEADER = 'x-graphql-yoga-csrf';

// CSRF prevention (Yoga's plugin): a request a browser would send cross-site without a preflight (a
// GET, a form POST) must carry CSRF_HEADER. One exception: a GET asking for text/event-stream whose
// operation is a subscription. Subscriptions change nothing, a cross-site page cannot read the stream
// without CORS, and a browser's EventSource (what GraphiQL's subscription tab and plain pages use)
// cannot send headers at all. A query sent that way is refused as before, once its type is known.
function useCsrfPrevention(): AnyPlugin {
  const csrf = useCSRFPrevention({ requestHeaders: [CSRF_HEADER] }) as AnyPlugin;
  const streams = new WeakSet<Request>();
  return {
    onRequestParse(payload) {
      const { request } = payload;
      if (request.method === 'GET' && request.headers.get('accept')?.includes('text/event-stream') && !request.headers.has(CSRF_HEADER)) {
        streams.add(request);
        return;
      }
      return csrf.onRequestParse?.(payload);
    },
    onExecute({ args }) {
      const request = (args.contextValue as { request?: Request }).request;
      if (request && streams.has(request)) {
        throw createGraphQLError('Required CSRF header(s) not present (only subscriptions may stream over GET without it)', {
          extensions: { code: 'CSRF', http: { status: 403 } },
        });
      }
    },
  };
}

// graphql-armor throws its rejections as bare GraphQLErrors; clients branch on codes, so each
// gets the code Yoga gives its own validation errors (the error is thrown right after this).
function withCode(_context: unknown, error: GraphQLError): void {
  (error.extensions as Record<string, unknown>).code = 'GRAPHQL_VALIDATION_FAILED';
}

// Yoga's own cap (`maxRequestBodySize`, turned off in server.ts) pipes every body through a
// counting TransformStream, even one of declared length: 0.15 ms of a 1.1 ms request in
// bench:read. A declared Content-Length needs no counting, since node:http delivers exactly that
// many bytes (and service.ts refuses POSTs without one), so only bodies of unknown length are
// counted. Same errors as Yoga's.
function useRequestBodyCap(maxBytes: number): AnyPlugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
      const declared = request.headers.get('content-length');
      if (declared !== null) {
        if (!/^\d+$/.test(declared)) {
          throw createGraphQLError('Content-Length header is invalid.', { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } });
        }
        if (Number(declared) > maxBytes) throw bodyTooLarge();
        return;
      }
      if (requestParser && request.body) setRequestParser((req) => requestParser(withCountedBody(req, maxBytes, fetchAPI)));
    },
  };
}

function bodyTooLarge(): GraphQLError {
  return createGraphQLError('Request body too large', { extensions: { code: 'REQUEST_ENTITY_TOO_LARGE', http: { status: 413 } } });
}

function withCountedBody(request: Request, maxBytes: number, fetchAPI: FetchAPI): Request {
  if (!request.body) return request;
  // A native stream must go through the native TransformStream (graphql-yoga#4583).
  const Transform = request.body instanceof ReadableStream ? globalThis.TransformStream : fetchAPI.TransformStream;
  let bytes = 0;
  const body = request.body.pipeThrough(
    new Transform<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes += chunk.byteLength;
        if (bytes > maxBytes) controller.error(bodyTooLarge());
        else controller.enqueue(chunk);
      },
    }),
  );
  return new fetchAPI.Request(request.url, { method: request.method, headers: request.headers, signal: request.signal, body, duplex: 'half' } as RequestInit);
}

/** A body over the ordinary cap is only accepted for batch-ingest mutations. */
function useOperationBodyCap(options: RequestLimitOptions): AnyPlugin {
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
