// HTTP 401 for requests to /graphql without a valid key, before any parsing or execution, with the
// same body shape a GraphQL client expects. The GraphiQL page itself (GET, text/html) stays open.
import type { Plugin } from 'graphql-yoga';
import type { Principal } from './principal.ts';

export function useHttpAuthStatus(authenticate: (request: Request) => Principal | null, endpoint = '/graphql'): Plugin {
  return {
    onRequest({ request, url, endResponse }) {
      if (url.pathname !== endpoint) return;
      if (request.method === 'GET' && request.headers.get('accept')?.includes('text/html')) return;
      if (authenticate(request) !== null) return;
      endResponse(
        new Response(JSON.stringify({ data: null, errors: [{ message: 'missing or invalid API key', extensions: { code: 'UNAUTHENTICATED' } }] }), {
          status: 401,
          headers: { 'content-type': 'application/json; charset=utf-8', 'www-authenticate': 'Bearer' },
        }),
      );
    },
  };
}
