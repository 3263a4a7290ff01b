// graphql-ws over WebSocket on the same /graphql path as HTTP and SSE. Operations go through
// yoga.getEnveloped, so parsing, validation, auth scopes and error masking are the same as over
// HTTP; the caller is authenticated at connection time with the same `authenticate(request)`, and
// the handshake's Origin is checked by the same rule as HTTP's (http/origin.ts).
import type { IncomingMessage, Server } from 'node:http';
import type { ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Authenticate } from './auth/principal.ts';
import { toFetchRequest } from './http/fetchRequest.ts';
import { originRefusal } from './http/origin.ts';
import type { Logger } from '../logger.ts';
import type { GraphQLServer } from './server.ts';

export const DEFAULT_WS_KEEP_ALIVE_MS = 12_000;
// A client that does not read lets the socket's send buffer grow; past this it is disconnected.
export const MAX_WS_BUFFERED_BYTES = 8 * 1024 * 1024;
const CLOSE_TOO_SLOW = 4429;

export interface GraphQLWebSocketDeps {
  server: Server;
  yoga: GraphQLServer;
  authenticate: Authenticate;
  /** Origins besides the service's own allowed to connect from a browser (CORS_ORIGINS). */
  allowedOrigins: readonly string[];
  logger: Logger;
  keepAliveMs?: number;
}

type Envelope = ReturnType<GraphQLServer['getEnveloped']>;
type RootValue = { execute: Envelope['execute']; subscribe: Envelope['subscribe'] };

export function attachGraphQLWebSocket(deps: GraphQLWebSocketDeps): { close(): Promise<void> } {
  const wss = new WebSocketServer({
    server: deps.server,
    path: '/graphql',
    verifyClient: ({ req }, accept) => {
      const refusal = originRefusal(toFetchRequest(req), deps.allowedOrigins);
      if (refusal === null) return accept(true);
      accept(false, 403, refusal, { 'Content-Type': 'text/plain; charset=utf-8' });
    },
  });
  const logger = deps.logger.child({ component: 'websocket' });
  const disposable = useServer(
    {
      // false closes the socket with 4403 Forbidden before any operation runs.
      onConnect: (ctx) => deps.authenticate(toRequest(ctx.extra.request, ctx.connectionParams)) !== null,
      onSubscribe: async (ctx, _id, payload) => {
        const request = toRequest(ctx.extra.request, ctx.connectionParams);
        const enveloped = deps.yoga.getEnveloped({ request, params: payload } as never);
        let document;
        try {
          document = enveloped.parse(payload.query);
        } catch (error) {
          return [error as never];
        }
        const args: ExecutionArgs = {
          schema: enveloped.schema,
          operationName: payload.operationName,
          document,
          variableValues: payload.variables,
          contextValue: await enveloped.contextFactory(),
          rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe } satisfies RootValue,
        };
        // Query limits (requestLimits.ts) reject by throwing from validation: answer with an error message
        // for this operation, as over HTTP, rather than failing the whole socket.
        try {
          const errors = enveloped.validate(args.schema, args.document);
          return errors.length ? errors : args;
        } catch (error) {
          return [error as never];
        }
      },
      execute: (args) => (args.rootValue as RootValue).execute(args),
      subscribe: (args) => (args.rootValue as RootValue).subscribe(args),
      onNext: (ctx) => {
        const socket: WebSocket = ctx.extra.socket;
        if (socket.bufferedAmount > MAX_WS_BUFFERED_BYTES) {
          logger.warn({ bufferedBytes: socket.bufferedAmount }, 'closing a WebSocket subscriber that reads too slowly');
          socket.close(CLOSE_TOO_SLOW, 'subscriber too slow; reconnect and resume with the last cursor');
        }
      },
    },
    wss,
    deps.keepAliveMs ?? DEFAULT_WS_KEEP_ALIVE_MS,
  );
  return {
    async close() {
      for (const client of wss.clients) client.close(1001, 'server shutting down');
      await disposable.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** The upgrade request as a fetch Request; connectionParams.authorization wins over the header. */
function toRequest(upgrade: IncomingMessage, params: Readonly<Record<string, unknown>> | undefined): Request {
  const request = toFetchRequest(upgrade);
  const authorization = params?.authorization;
  if (typeof authorization === 'string') request.headers.set('authorization', authorization);
  return request;
}
