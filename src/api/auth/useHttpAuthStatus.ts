// HTTP 401 for requests to /graphql without a valid key, before any parsing or execution, with the
// same body shape a GraphQL client expects (or the authenticator's own refusal, e.g. 403 for a
// keyless service reached by a non-loopback host name). The GraphiQL page itself (GET, text/html)
// stays open.
import type { Plugin } from 'graphql-yoga';
import type { Authenticate } from './principal.ts';

const DEFAULT_REFUSAL = { status: 401, message: 'missing or invalid API key' } as const;

export function useHttpAuthStatus(authenticate: Authenticate, endpoint = '/graphql'): Plugin {
  return {
    onRequest({ request, url, endResponse }) {
      if (url.pathname !== endpoint) return;
      if (request.method === 'GET' && request.headers.get('accept')?.includes('text/html')) return;
      if (authenticate(request) !== null) return;
      endResponse(refusalResponse(authenticate));
    },
  };
}

/** The answer to a request `authenticate` refused, as a GraphQL-shaped JSON body. */
export function refusalResponse(authenticate: Authenticate): Response {
  return errorResponse(authenticate.refusal ?? DEFAULT_REFUSAL);
}

/** A refusal before GraphQL runs (401 UNAUTHENTICATED or 403 FORBIDDEN), in the body a GraphQL client expects. */
export function errorResponse({ status, message }: { status: 401 | 403; message: string }): Response {
  const code = status === 401 ? 'UNAUTHENTICATED' : 'FORBIDDEN';
  return new Response(JSON.stringify({ data: null, errors: [{ message, extensions: { code } }] }), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...(status === 401 && { 'www-authenticate': 'Bearer' }) },
  });
}
