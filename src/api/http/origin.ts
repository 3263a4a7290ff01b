// Which browser origins may talk to the API. Browsers attach Origin to cross-origin requests and to
// every WebSocket handshake, and a WebSocket is not covered by CORS: without this check any page
// the operator opens could read the API through ws://127.0.0.1. Callers that are not browsers (curl,
// the CLI, other services) send no Origin and are left to authentication.
import type { Plugin } from 'graphql-yoga';
import { errorResponse } from '../auth/useHttpAuthStatus.ts';

/**
 * Null when `request` may proceed: it has no Origin, its Origin is the service's own (same host
 * and port as its Host, as for the console and GraphiQL), or the Origin is in `allowedOrigins`
 * (CORS_ORIGINS). Otherwise the reason to refuse it with 403.
 */
export function originRefusal(request: Request, allowedOrigins: readonly string[]): string | null {
  const origin = request.headers.get('origin');
  if (origin === null || allowedOrigins.includes(origin) || isSameHost(origin, request.url)) return null;
  return 'this origin may not call the API; list it in CORS_ORIGINS to allow it';
}

function isSameHost(origin: string, requestUrl: string): boolean {
  try {
    return new URL(origin).host === new URL(requestUrl).host;
  } catch {
    // `Origin: null` (sandboxed frames, file: pages) and anything unparsable.
    return false;
  }
}

/** 403 FORBIDDEN for every request originRefusal refuses, before anything else reads it. */
export function useOriginCheck(allowedOrigins: readonly string[]): Plugin {
  return {
    onRequest({ request, endResponse }) {
      const message = originRefusal(request, allowedOrigins);
      if (message === null) return;
      endResponse(errorResponse({ status: 403, message }));
    },
  };
}
